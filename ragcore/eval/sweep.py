"""Run several configurations in one evaluation: a base configuration, one-at-a-time sweeps of
settings, and the baselines; then chart each metric against each swept parameter.

``--sweep top_k=5,10,20`` varies one :class:`~ragcore.settings.config.RagcoreSettings` field from the base
configuration (each value read and checked by the setting's rule in the settings catalog: its type,
range and choices); several ``--sweep`` options are separate one-at-a-time sweeps, not a grid.
Configurations that come out identical (the base, ``mode=sparse`` and the BM25 baseline, say)
are run once and reported under each label.

``chunk_size`` / ``chunk_overlap`` change the chunks, so each value needs its own collection:
the data set's ``corpus/`` is ingested into ``{collection}__cs{size}`` (``…o{overlap}`` when the
overlap differs from the base) in the same store. Those collections are kept, so a re-run only
checks that the files are unchanged; the report says which were created. A value equal to the
base collection's own chunking uses the base collection.
"""

from __future__ import annotations

import os
import platform
import time
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Sequence

from ragcore.settings.catalog import entry, sweepable
from ragcore.settings.rules import Rule
from ragcore.settings.config import ConfigError, RagcoreSettings, check_value
from ragcore.eval.dataset import EvalDataset
from ragcore.eval.checks import missing_relevant, stale_chunks
from ragcore.eval.runner import CONFIG_KEYS, DocPathMapper, EvalRun, Progress, mapper_for, run_config, settings_config

__all__ = [
    "BaseCollection",
    "ChunkCollection",
    "EvalReport",
    "PlannedRun",
    "RunPlan",
    "Sweep",
    "SweepError",
    "SweepGroup",
    "SWEEPABLE",
    "base_collection",
    "coerce_value",
    "evaluate",
    "limit_questions",
    "parse_sweep",
    "plan_runs",
    "missing_relevant",
    "stale_chunks",
]

# Settings fields a sweep may vary (the ones that change retrieval, chunking or answering, and the collection:
# another of the same corpus, e.g. built with another embedding model, question by question): the catalog's
SWEEPABLE = sweepable()
INGEST_KEYS = ("chunk_size", "chunk_overlap")


class SweepError(ValueError):
    """A ``--sweep`` that cannot be run: unknown key, bad value, missing corpus."""


@dataclass(frozen=True)
class Sweep:
    key: str
    values: tuple[Any, ...]

    def __str__(self) -> str:
        return f"{self.key}=" + ",".join(str(v) for v in self.values)


def _rule(key: str) -> Rule:
    try:
        return entry(key, "settings").rule
    except KeyError:
        raise SweepError(f"unknown setting {key!r}; sweepable: {', '.join(SWEEPABLE)}") from None


def coerce_value(key: str, raw: str) -> Any:
    """``raw`` as the setting ``key`` takes it, checked by the setting's own rule (settings/catalog.py):
    its type, its range and its choices, with the settings' words when it does not fit."""
    rule = _rule(key)
    try:
        return check_value(key, rule, raw.strip(), key)
    except ConfigError as exc:
        raise SweepError(str(exc)) from None


def parse_sweep(text: str) -> Sweep:
    """``"top_k=5,10,20"`` -> ``Sweep("top_k", (5, 10, 20))``. Dashes in the key are accepted
    (``rrf-k=30,60``); so is ``fusion_k`` for ``rrf_k``."""
    key, sep, vals = text.partition("=")
    key = key.strip().replace("-", "_")
    key = {"fusion_k": "rrf_k", "k": "top_k", "chunk": "chunk_size"}.get(key, key)
    if not sep or not key or not vals.strip():
        raise SweepError(f"--sweep {text!r}: expected KEY=V1,V2,…, e.g. top_k=5,10,20")
    if key not in SWEEPABLE:
        _rule(key)  # an unknown key gets the "unknown setting" message
        raise SweepError(f"{key} cannot be swept; sweepable: {', '.join(SWEEPABLE)}")
    values = tuple(dict.fromkeys(coerce_value(key, v) for v in vals.split(",") if v.strip()))
    if not values:
        raise SweepError(f"--sweep {text!r}: no values")
    return Sweep(key, values)


# --------------------------------------------------------------------------- the report


@dataclass(frozen=True)
class SweepGroup:
    key: str
    values: tuple[Any, ...]
    labels: tuple[str, ...]  # the run label of each value


@dataclass
class EvalReport:
    """Everything one evaluation produced: runs (one per configuration label), sweeps, notes."""

    dataset: str
    dataset_path: str | None
    collection: str
    base_label: str
    runs: list[EvalRun]
    sweeps: list[SweepGroup] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    when: str = field(default_factory=lambda: datetime.now(timezone.utc).isoformat(timespec="seconds"))
    seconds: float = 0.0
    machine: dict[str, Any] = field(default_factory=dict)
    base_config: dict[str, Any] = field(default_factory=dict)
    corpus_version: str | None = None

    def run(self, label: str) -> EvalRun:
        return next(r for r in self.runs if r.label == label)


def machine() -> dict[str, Any]:
    """The machine a run was measured on (results carry it; bench/ uses the same)."""
    return {"python": platform.python_version(), "cpus": os.cpu_count(), "platform": platform.platform(),
            "load_avg": [round(x, 2) for x in os.getloadavg()]}


# --------------------------------------------------------------------------- evaluate


@dataclass(frozen=True)
class PlannedRun:
    """One configuration to run: its report label, its settings and the collection it reads."""

    label: str
    settings: RagcoreSettings
    collection: str

    def key(self) -> tuple:
        """Equal keys are the same configuration: run once, reported under each label."""
        return (self.collection, *(getattr(self.settings, k) for k in CONFIG_KEYS))


@dataclass(frozen=True)
class BaseCollection:
    """The base configuration as the base collection fixes it: its chunking (what its chunks
    were built with) and, when calibrated, the bar in force."""

    settings: RagcoreSettings
    corpus_version: str | None

    @property
    def chunking(self) -> tuple[int, int]:
        return (self.settings.chunk_size, self.settings.chunk_overlap)


@dataclass(frozen=True, order=True)
class ChunkCollection:
    """A collection a chunk_size/chunk_overlap sweep value needs (the corpus re-chunked)."""

    name: str
    chunk_size: int
    chunk_overlap: int


@dataclass(frozen=True)
class RunPlan:
    """Every configuration of an evaluation, in report order, before anything runs."""

    base_label: str
    runs: tuple[PlannedRun, ...]
    groups: tuple[SweepGroup, ...]
    notes: tuple[str, ...]

    def chunk_collections(self, base_collection: str) -> tuple[ChunkCollection, ...]:
        return tuple(sorted({ChunkCollection(p.collection, p.settings.chunk_size, p.settings.chunk_overlap)
                             for p in self.runs if p.collection != base_collection
                             and not p.label.startswith("collection=")}))  # another collection: built already

    def distinct_runs(self) -> int:
        return len({p.key() for p in self.runs})


def _chunk_collection(collection: str, settings: RagcoreSettings, base: RagcoreSettings) -> str:
    name = f"{collection}__cs{settings.chunk_size}"
    if settings.chunk_overlap != base.chunk_overlap:
        name += f"o{settings.chunk_overlap}"
    return name


def evaluate(
    engine: Any,
    dataset: EvalDataset,
    *,
    collection: str,
    settings: RagcoreSettings,
    sweeps: Sequence[Sweep] = (),
    baselines: Sequence[str] = (),
    progress: Progress | None = None,
    say: Callable[[str], None] | None = None,
    limit: int | None = None,
    base_label: str | None = None,
    cold_cache: bool = False,
    keep_temp: bool = True,
) -> EvalReport:
    """Run the base configuration, every sweep value and the baselines over ``dataset``.

    ``baselines`` names any of ``"llamaindex"`` (needs the data set's ``corpus/``) and
    ``"bm25"``. ``progress(done, total, label)`` counts questions over all runs; ``say``
    gets one line per notable step (ingesting a chunk-size collection, building the baseline).
    ``limit`` keeps the first ``limit`` answerable and the first ``limit`` unanswerable
    questions (a quick look). ``cold_cache`` empties the encoder's cache before each
    configuration (see :func:`~ragcore.eval.runner.run_config`); either way the model and the
    search index are loaded before the first question, so no run pays for loading them.
    ``keep_temp=False`` drops the chunk-size collections at the end (default: keep them, so a
    re-run does not re-embed the corpus).
    """
    t_start = time.perf_counter()
    say = say or (lambda _msg: None)
    _check_baselines(baselines)
    ds = limit_questions(dataset, limit)
    base = base_collection(engine, dataset, collection, settings)
    notes = _collection_warnings(engine, collection, base.settings, ds, say)
    plan = plan_runs(base, collection, sweeps, baselines, base_label)
    notes += plan.notes
    chunk_cols = plan.chunk_collections(collection)
    notes += _ingest_chunk_collections(engine, dataset, base.settings, chunk_cols, progress, say, keep_temp=keep_temp)
    counter = _QuestionCounter(progress, len(ds.questions), plan.distinct_runs() + ("llamaindex" in baselines))
    runs, base_mapper = _run_planned(engine, ds, plan, collection, counter, say, cold_cache=cold_cache)
    if "llamaindex" in baselines and ds.corpus_dir is None:
        notes.append("LlamaIndex baseline skipped: the data set has no corpus/ folder")
    elif "llamaindex" in baselines:
        runs += (_run_llamaindex(engine, ds, base.settings, collection, base_mapper, counter, say),)
    if not keep_temp:
        for col in chunk_cols:
            engine.store.drop(col.name)
    counter.finish()
    if cold_cache:
        notes.append("latency: the encoder's vector cache was emptied before each configuration (every run starts cold)")
    return EvalReport(
        dataset=dataset.name, dataset_path=str(dataset.root) if dataset.root else None, collection=collection,
        base_label=plan.base_label, runs=list(runs), sweeps=list(plan.groups), notes=notes,
        seconds=time.perf_counter() - t_start, machine=machine(), base_config=settings_config(base.settings),
        corpus_version=base.corpus_version,
    )


def _check_baselines(baselines: Sequence[str]) -> None:
    from ragcore.eval.baselines import BASELINES

    unknown = [b for b in baselines if b not in BASELINES]
    if unknown:
        raise SweepError(f"unknown baseline(s) {', '.join(unknown)}; choose from {', '.join(BASELINES)}")


def limit_questions(dataset: EvalDataset, limit: int | None) -> EvalDataset:
    """The data set with its first ``limit`` answerable and first ``limit`` unanswerable
    questions (all of them when ``limit`` is falsy)."""
    if not limit:
        return replace(dataset, questions=tuple(dataset.questions))
    return replace(dataset, questions=(*dataset.answerable[:limit], *dataset.unanswerable[:limit]))


def base_collection(engine: Any, dataset: EvalDataset, collection: str, settings: RagcoreSettings) -> BaseCollection:
    """``settings`` on ``collection`` with the collection's own chunking and, when the bar is
    calibrated, the bar in force fixed (so a swept bar equal to it is the same run, and a
    chunk-size sweep's collections, never calibrated, are judged at the same bar)."""
    base = settings.with_(collection=collection)
    info = engine.store.info(collection) if engine.store.exists(collection) else None
    if info is None or info.chunks == 0:
        raise SweepError(f"the collection {collection!r} is empty or does not exist; ingest the corpus first: "
                         f"ragcore ingest {dataset.corpus_dir or 'CORPUS'} --collection {collection}")
    stored = dict(info.settings or {})
    chunking = (int(stored.get("chunk_size", base.chunk_size)), int(stored.get("chunk_overlap", base.chunk_overlap)))
    if chunking != (base.chunk_size, base.chunk_overlap):
        base = base.with_(chunk_size=chunking[0], chunk_overlap=chunking[1])
    if base.calibrated_bar:
        base = base.with_(abstain_bar=engine.abstain_bar(base, collection)[0], calibrated_bar=False)
    return BaseCollection(base, info.corpus_version)


def _collection_warnings(
    engine: Any, collection: str, base: RagcoreSettings, dataset: EvalDataset, say: Callable[[str], None],
) -> list[str]:
    """Warnings that make the numbers untrustworthy: chunks built by other code, relevant
    documents the collection does not hold. Each is also said."""
    notes: list[str] = []
    stale = stale_chunks(engine, collection, base)
    if stale:
        notes.append(
            f"WARNING: {stale[0]} of {stale[1]} chunks of {collection!r} were written by another chunker, BM25 or "
            f"embedding version (or chunk settings) than this code uses: queries and stored vectors may not match "
            f"(BM25 above all). Re-run `ragcore ingest` on the corpus before trusting these numbers."
        )
        say(notes[-1])
    missing = missing_relevant(engine, collection, dataset)
    if missing:
        notes.append(
            f"WARNING: {len(missing[0])} of {missing[1]} relevant documents of the data set are not in the collection "
            f"{collection!r} (e.g. {', '.join(sorted(missing[0])[:3])}): is it the data set's corpus? Retrieval metrics "
            f"cannot reach 1 for questions that need them."
        )
        say(notes[-1])
    return notes


def plan_runs(
    base: BaseCollection, collection: str, sweeps: Sequence[Sweep], baselines: Sequence[str], base_label: str | None,
) -> RunPlan:
    """The base run, then each sweep's values in order, then the BM25 baseline (the
    LlamaIndex baseline is not a ragcore configuration and runs apart)."""
    from ragcore.eval.baselines import BM25_LABEL, bm25_settings

    label0 = base_label or f"ragcore {base.settings.retrieval_mode} (base)"
    runs = [PlannedRun(label0, base.settings, collection)]
    groups: list[SweepGroup] = []
    notes: list[str] = []
    for sw in sweeps:
        swept = [_plan_value(sw.key, v, base, collection) for v in sw.values]
        runs += [p for p, _ in swept]
        notes += [n for _, n in swept if n]
        groups.append(SweepGroup(sw.key, sw.values, tuple(p.label for p, _ in swept)))
    if "bm25" in baselines:
        runs.append(PlannedRun(BM25_LABEL, bm25_settings(base.settings), collection))
    return RunPlan(label0, tuple(runs), tuple(groups), tuple(notes))


def _plan_value(key: str, value: Any, base: BaseCollection, collection: str) -> tuple[PlannedRun, str | None]:
    """One sweep value as a run (and a note when a setting had to give way)."""
    if key == "collection":  # the same questions on another collection, with its own embedding model
        note = f"collection={value}: judged at the base collection's abstain bar ({base.settings.abstain_bar:.3f})"
        return PlannedRun(f"collection={value}", base.settings.with_(collection=value), value), note
    changes: dict[str, Any] = {key: value}
    note = None
    if key == "abstain_bar":  # a swept bar is the bar: not the collection's calibrated one
        changes["calibrated_bar"] = False
    if key == "chunk_size" and base.settings.chunk_overlap >= value:
        # in the same step: the settings refuse an overlap that is not below the size
        changes["chunk_overlap"] = max(0, value // 5)
        note = f"chunk_size={value}: chunk_overlap lowered to {changes['chunk_overlap']} (must be below the size)"
    s = base.settings.with_(**changes)
    col = collection
    if key in INGEST_KEYS and (s.chunk_size, s.chunk_overlap) != base.chunking:
        col = _chunk_collection(collection, s, base.settings)
    return PlannedRun(f"{key}={value}", s, col), note


def _ingest_chunk_collections(
    engine: Any, dataset: EvalDataset, base: RagcoreSettings, collections: Sequence[ChunkCollection],
    progress: Progress | None, say: Callable[[str], None], *, keep_temp: bool,
) -> list[str]:
    """Ingest the data set's corpus into each chunk-size collection (kept for re-runs, so a
    re-run only checks the files); one note per collection."""
    if collections and dataset.corpus_dir is None:
        raise SweepError("a chunk_size/chunk_overlap sweep re-ingests the data set's corpus/ folder, and this data set has none")
    notes = []
    for col in collections:
        existed = engine.store.exists(col.name)
        say(f"ingesting {dataset.corpus_dir} into the temporary collection {col.name!r} "
            f"(chunk_size={col.chunk_size}, chunk_overlap={col.chunk_overlap})")
        s_ing = base.with_(chunk_size=col.chunk_size, chunk_overlap=col.chunk_overlap, collection=col.name)

        def ing_progress(done: int, total: int, path: str, name: str = col.name) -> None:
            if progress:
                progress(0, 1, f"ingest {name}: {done}/{total} files")

        rep = engine.ingest([dataset.corpus_dir], col.name, progress=ing_progress, settings=s_ing)
        c = rep.summary()
        notes.append(
            f"chunk-size sweep: {'re-used' if existed else 'created'} the collection {col.name!r} in the same store "
            f"from {dataset.corpus_dir} (chunk_size={col.chunk_size}, chunk_overlap={col.chunk_overlap}; {c['added']} "
            f"added, {c['updated']} updated, {c['unchanged']} unchanged, {c['failed']} failed, {rep.seconds:.0f} s)"
            + (", dropped at the end" if not keep_temp else "; kept for re-runs (ragcore eval --drop-temp drops it)")
        )
    return notes


class _QuestionCounter:
    """One progress count over all runs: run ``i``'s question ``j`` is ``i * per_run + j``."""

    def __init__(self, progress: Progress | None, per_run: int, n_runs: int) -> None:
        self.progress = progress
        self.per_run = per_run
        self.total = n_runs * per_run
        self.done_runs = 0

    def __call__(self, done: int, _n: int, label: str) -> None:
        if self.progress:
            self.progress(self.done_runs * self.per_run + done, self.total, label)

    def run_done(self) -> None:
        self.done_runs += 1

    def finish(self) -> None:
        if self.progress:
            self.progress(self.total, self.total, "done")


def _run_planned(
    engine: Any, ds: EvalDataset, plan: RunPlan, collection: str, counter: _QuestionCounter,
    say: Callable[[str], None], *, cold_cache: bool,
) -> tuple[tuple[EvalRun, ...], DocPathMapper | None]:
    """Every planned run (a configuration planned twice runs once) and the base collection's
    path mapper (for the LlamaIndex baseline's links)."""
    runs: list[EvalRun] = []
    done: dict[tuple, EvalRun] = {}
    mappers: dict[str, DocPathMapper] = {}
    for p in plan.runs:
        first = done.get(p.key())
        if first is not None:
            runs.append(replace(first, label=p.label, notes=(*first.notes, f"same configuration as {first.label!r}: run once")))
            continue
        if p.collection not in mappers:
            mappers[p.collection] = mapper_for(engine, p.collection, ds)
            engine.retrieve("warm up", p.settings, p.collection)  # load the model and the search index
        say(f"running {p.label} ({len(ds.questions)} questions)")
        run = run_config(engine, ds, p.settings, collection=p.collection, label=p.label, progress=counter,
                         mapper=mappers[p.collection], cold_cache=cold_cache)
        if p.collection != collection:
            run = replace(run, notes=(*run.notes, f"temporary collection {p.collection!r}"))
        done[p.key()] = run
        runs.append(run)
        counter.run_done()
    return tuple(runs), mappers.get(collection)


def _run_llamaindex(
    engine: Any, ds: EvalDataset, base: RagcoreSettings, collection: str, mapper: DocPathMapper | None,
    counter: _QuestionCounter, say: Callable[[str], None],
) -> EvalRun:
    """The LlamaIndex baseline over the data set's ``corpus/`` (which it needs), its index
    cached under the data folder."""
    from ragcore.eval.baselines import LLAMAINDEX_LABEL, LlamaIndexBaseline, run_llamaindex_baseline

    assert ds.corpus_dir is not None
    bl = LlamaIndexBaseline(ds.corpus_dir, engine.encoder, Path(base.data_dir) / "eval_cache",
                            max_file_bytes=base.max_file_bytes)
    say(f"running {LLAMAINDEX_LABEL}")
    run = run_llamaindex_baseline(bl, ds, k=base.candidates, collection=collection, mapper=mapper, progress=counter)
    counter.run_done()
    return run
