"""The command line the analysis modules share (``python -m ragcore.eval.misses`` / ``.fragments``):
a data set, a collection, the environment's settings and an engine on them."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Any, Sequence

from ragcore.settings.config import RagcoreSettings
from ragcore.eval.dataset import EvalDataset


@dataclass(frozen=True)
class Analysis:
    args: argparse.Namespace
    settings: RagcoreSettings
    dataset: EvalDataset
    engine: Any  # pipeline.Engine: the caller closes it


def open_analysis(prog: str, description: str | None, argv: Sequence[str] | None, *, title: bool = False) -> Analysis:
    from ragcore.engine.engine import Engine
    from ragcore.eval.dataset import load_dataset

    ap = argparse.ArgumentParser(prog=prog, description=description)
    ap.add_argument("dataset")
    ap.add_argument("--collection", "-c", required=True)
    if title:
        ap.add_argument("--title", default=None)
    args = ap.parse_args(argv)
    settings = RagcoreSettings.from_env()
    return Analysis(args, settings, load_dataset(args.dataset), Engine(settings))
