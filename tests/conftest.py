"""Shared fixtures: the real ONNX encoder (loaded once), engines over embedded Qdrant in
temp folders, and the demo corpus ingested once per run (copied for each user)."""

from __future__ import annotations

import os
import shutil
import threading
from pathlib import Path
from typing import Callable, Iterator

import pytest

from ragcore.settings.config import RagcoreSettings
from ragcore.encoders.minilm import OnnxMiniLM
from ragcore.engine.engine import Engine
from tests.support.openai_server import openai_server  # noqa: F401  (fixture)

REPO = Path(__file__).resolve().parent.parent
DOCS = REPO / "demo"
DJANGO = REPO.parent / "shared" / "data" / "django-docs-qa"


@pytest.fixture(autouse=True)
def _no_home_data(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """No test may touch ~/.local/share/ragcore or a real OpenAI endpoint."""
    monkeypatch.setenv("RAGCORE_DATA_DIR", str(tmp_path_factory.getbasetemp() / "default-data"))
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "RAGCORE_LLM_MODEL", "RAGCORE_QDRANT_URL"):
        monkeypatch.delenv(var, raising=False)


# The files that take longest (a real llama.cpp server, a real app and Chromium, whole corpora asked), longest
# first (roughly), as measured in a full run (junit XML, each file's testcases summed; 16:07 UTC 28 Nov at f442bea).
# pytest-xdist's --dist loadfile hands each worker one file at a time in collection order (pyproject.toml
# turns off its reordering by number of tests, which ran the two-test llama.cpp file last: one worker then
# spent minutes alone on it while the other had finished). Longest first, the many short files after them
# fill the gaps and both workers end together. A file missing from this list only runs later.
SLOWEST_FIRST = (
    "tests/integration/test_llama_endpoint_load.py",
    "tests/integration/test_rerank_restart.py",
    "tests/integration/test_verbatim.py",
    "tests/integration/test_answer_form_sets.py",
    # third on its worker, not first: its time bounds scale with the 1-minute load average, which lags the
    # llama.cpp file's busy loops by a minute
    "tests/browser/test_browser.py",
    "tests/integration/test_models_llama_server.py",
    "tests/browser/test_notebook_layout.py",
    "tests/integration/test_readme.py",
    "tests/integration/service/test_jobs.py",
    "tests/integration/test_hostile_crash.py",
    "tests/integration/test_hostile_store.py",
    "tests/unit/storage/test_snapshot.py",
    "tests/unit/ingest/test_ingest_pipeline.py",
    "tests/integration/test_previous_release.py",
    "tests/unit/eval/test_eval_runner.py",
    "tests/integration/test_django_citations.py",
    "tests/integration/test_real_llm_server.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Run the files of ``SLOWEST_FIRST`` first, in its order; the others keep theirs (a stable sort:
    a file's tests stay together and in order, so its module fixtures are still built once)."""
    rank = {path: i for i, path in enumerate(SLOWEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::", 1)[0], len(rank)))


ENCODER = OnnxMiniLM()  # the test process's one real encoder (it loads on first use): the ``encoder`` fixture


@pytest.fixture(scope="session")
def encoder() -> OnnxMiniLM:
    return ENCODER


@pytest.fixture
def make_engine(tmp_path: Path, encoder: OnnxMiniLM) -> Iterator[Callable[..., Engine]]:
    engines: list[Engine] = []

    def make(**overrides) -> Engine:
        data_dir = overrides.pop("data_dir", tmp_path / f"data{len(engines)}")
        s = RagcoreSettings(data_dir=data_dir, **overrides)
        e = Engine(s, encoder=encoder)
        engines.append(e)
        return e

    yield make
    for e in engines:
        e.close()


@pytest.fixture(scope="module")
def ingested_engine(tmp_path_factory: pytest.TempPathFactory, encoder: OnnxMiniLM) -> Iterator[Callable[..., Engine]]:
    """Files (relative path → text or bytes) ingested into a fresh engine, once per test module.

    ``calibrate=False`` by default: the label-free abstain bar costs a few seconds an ingest and only
    tests of abstaining need it."""
    engines: list[Engine] = []

    def make(files: dict[str, str | bytes], collection: str = "test", *, calibrate: bool = False, **settings) -> Engine:
        root = write_corpus(tmp_path_factory.mktemp("corpus"), files)
        e = Engine(RagcoreSettings(data_dir=tmp_path_factory.mktemp("data"), collection=collection, **settings),
                   encoder=encoder)
        engines.append(e)
        e.ingest([root], collection, calibrate=calibrate)
        return e

    yield make
    for e in engines:
        e.close()


_guide_lock = threading.Lock()
_guide: list[Path] = []
_run_tmp: list[Path] = []


@pytest.fixture(scope="session", autouse=True)
def _run_temp_folder(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Where ``guide_folder`` builds: this run's temp folder, which the pytest-xdist workers share
    (each has its own folder below it) and which pytest removes with old runs."""
    base = tmp_path_factory.getbasetemp()
    _run_tmp[:] = [base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base]


def run_folder() -> Path:
    """This run's temp folder, shared by its pytest-xdist workers: where a file that every worker may
    need (the demo collection, the llama.cpp model) is built once, under a ``filelock``."""
    assert _run_tmp, "run_folder() is for tests: the _run_temp_folder fixture says where it is"
    return _run_tmp[0]


def guide_folder() -> Path:
    """A data folder whose collection "guide" is the bundled demo corpus (demo/), ingested and its
    abstain bar calibrated as the app's first start does. Built once per run (about ten seconds of
    embedding): the first worker to need it builds it, the others wait for it. Never opened again:
    each user takes a copy (``copy_guide``), so what one writes never reaches another."""
    from filelock import FileLock

    from ragcore.eval.demo import ensure_demo_collection

    with _guide_lock:
        if not _guide:
            home = run_folder() / "guide-built"
            with FileLock(f"{home}.lock"):
                if not (home / "built").exists():
                    shutil.rmtree(home, ignore_errors=True)
                    e = Engine(RagcoreSettings(data_dir=home / "data"), encoder=ENCODER)
                    try:
                        report = ensure_demo_collection(e, "guide")
                    finally:
                        e.close()
                    assert report is not None and report.chunks_written > 100
                    (home / "built").touch()
            _guide.append(home / "data")
        return _guide[0]


def copy_guide(dest: Path) -> Path:
    """``dest``: a new data folder holding the built "guide" collection (``guide_folder``)."""
    shutil.copytree(guide_folder(), dest)
    return dest


@pytest.fixture(scope="session")
def guide_engine(tmp_path_factory: pytest.TempPathFactory, encoder: OnnxMiniLM) -> Iterator[Engine]:
    """The bundled user guide (demo/) ingested and its abstain bar calibrated, as the app's
    first start does (collection "guide"): an engine over a copy of ``guide_folder``."""
    e = Engine(RagcoreSettings(data_dir=copy_guide(tmp_path_factory.mktemp("guide") / "data")), encoder=encoder)
    yield e
    e.close()


def write_corpus(root: Path, files: dict[str, str | bytes]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for rel, content in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            p.write_bytes(content)
        else:
            p.write_text(content, encoding="utf-8")
    return root


def django_subset(dest: Path, pages: list[str]) -> Path:
    """Copy some real Django pages (BSD-3) into ``dest``; skip when the data set is absent."""
    corpus = DJANGO / "corpus"
    if not corpus.is_dir():
        pytest.skip(f"the django-docs-qa data set is not at {DJANGO}")
    for rel in pages:
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(corpus / rel, dest / rel)
    return dest


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() == "true"
