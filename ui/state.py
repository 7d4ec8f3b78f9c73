"""Process-wide runtime (one Engine per process), per-session settings and the shared sidebar."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import streamlit as st

from ragcore.settings import catalog
from ragcore.settings.app_file import LoadedSettings, SettingsFileError, load_app_settings
from ragcore.eval.demo import DEMO_COLLECTION
from ragcore.settings.config import ConfigError, RagcoreSettings
from ragcore.engine.engine import Engine
from ragcore.storage.store import StoreError
from ragcore.types import IngestReport

from .firststart import _copy_old_store, ensure_demo  # noqa: F401 - the app's frame and tests use them from here
from .jobs import IngestJob
from .runtime import Runtime, friendly  # noqa: F401 - pages and ui modules use them from here
from .warmup import ensure_warm
from .notebook import Notebook, NotebookError
from .render import md_code, md_escape, md_inline

CONTEXT_MODES = ("corpus", "selection", "both")
CONTEXT_LABELS = {"corpus": "Full corpus", "selection": "Selected text", "both": "Both"}
# the rule's modes, its default first (the app's controls show hybrid first)
RETRIEVAL_MODES = tuple(sorted(catalog.entry("retrieval_mode").rule.choices, key=lambda m: m != catalog.entry("retrieval_mode").default))
TOP_K_MAX = int(catalog.widget_range("top_k")[1])  # the app's top-K controls (the settings catalog's widget range)


# --------------------------------------------------------------------------- process-wide runtime


@st.cache_resource(show_spinner=False)
def get_runtime(data_dir: str, qdrant_url: str | None) -> Runtime:
    """One Engine per process and data directory. Questions read the collections' query snapshots,
    so the app does not hold embedded Qdrant's folder lock: ``ragcore ingest`` can write meanwhile,
    and the next question here reads the new snapshot."""
    settings = load_settings(data_dir).settings.with_(qdrant_url=qdrant_url)
    Path(settings.data_dir).mkdir(parents=True, exist_ok=True)  # an unusable folder fails here, clearly
    engine = Engine(settings)
    return Runtime(engine=engine, settings=settings)


def secrets_env() -> dict[str, str]:
    """RAGCORE_* / OPENAI_* entries of .streamlit/secrets.toml (the place for API keys besides the environment)."""
    try:
        items = dict(st.secrets)
    except Exception:  # noqa: BLE001 - no secrets file: nothing to add
        return {}
    return {k: str(v) for k, v in items.items() if k.startswith(("RAGCORE_", "OPENAI_")) and isinstance(v, (str, int, float))}


def load_settings(data_dir: str | Path) -> LoadedSettings:
    """Defaults, the settings file in the data directory, the environment and the secrets file."""
    try:
        return load_app_settings(data_dir, secrets=secrets_env(), secrets_toml=True)  # [openai] / [llm] tables too
    except SettingsFileError as exc:  # an unreadable file: say so and start from the environment
        return LoadedSettings(RagcoreSettings.from_env(data_dir=Path(data_dir)), Path(data_dir), {}, (str(exc),))


def runtime() -> Runtime:
    try:
        env = RagcoreSettings.from_env()
    except ConfigError as exc:  # a wrong RAGCORE_* / OPENAI_* variable: say which, start nothing
        st.error(md_escape(str(exc)))
        st.stop()
    try:
        return get_runtime(str(env.data_dir), env.qdrant_url)
    except StoreError as exc:
        st.error(md_escape(str(exc)))
    except Exception as exc:  # noqa: BLE001
        st.error(md_escape(
            f"Could not open the data directory {env.data_dir} ({type(exc).__name__}: {exc}). "
            "Check that it is writable, or set RAGCORE_DATA_DIR to another folder and restart the app."
        ))
    st.stop()
    raise RuntimeError("unreachable")


def show_error(exc: BaseException, action: str) -> None:
    st.error(md_escape(friendly(exc, action)), icon=":material/error:")


# --------------------------------------------------------------------------- session settings


def init_session(rt: Runtime) -> None:
    ss = st.session_state
    if "rc_base" not in ss:  # every new session (a reload) reads the settings file again
        loaded = load_settings(rt.settings.data_dir)
        ss["rc_base"] = loaded.settings.with_(qdrant_url=rt.settings.qdrant_url)
        ss["rc_sources"] = dict(loaded.sources)
        ss["rc_settings_problems"] = loaded.problems
    from .share import adopt_url

    first_run = adopt_url(ss)  # a link's lab setup and selected cell
    base: RagcoreSettings = ss["rc_base"]
    ss.setdefault("cfg_collection", base.collection)
    ss.setdefault("cfg_context", "corpus")
    ss.setdefault("cfg_mode", base.retrieval_mode)
    ss.setdefault("cfg_top_k", int(min(max(base.top_k, 1), TOP_K_MAX)))
    ss.setdefault("cfg_threshold", float(min(max(base.threshold, 0.0), 1.0)))
    # the URL's collection: a reload or a link (the session's first run), or a citation link to the
    # viewer (it has a path) not seen before. Not otherwise: the URL may still echo a collection this
    # session showed before the analyst switched (ui/share.py, adopt_url), with or without a path
    qp = st.query_params
    qp_col = qp.get("collection")
    seen: set = ss.setdefault("rc_qp_links", set())
    link = (qp.get("path"), qp.get("lines"), qp.get("page"), qp_col)
    new_link = bool(link[0]) and link not in seen
    if link[0]:
        seen.add(link)
    if (first_run or new_link) and qp_col and qp_col != ss["cfg_collection"]:
        if any(c.name == qp_col for c in rt.collections()):
            ss["cfg_collection"] = qp_col


def base_settings() -> RagcoreSettings:
    return st.session_state["rc_base"]


def set_base_settings(s: RagcoreSettings) -> None:
    st.session_state["rc_base"] = s


def settings() -> RagcoreSettings:
    """This session's settings: the Settings page's values plus the notebook's controls."""
    ss = st.session_state
    return base_settings().with_(
        collection=ss["cfg_collection"], retrieval_mode=ss["cfg_mode"], top_k=int(ss["cfg_top_k"]),
        threshold=round(float(ss["cfg_threshold"]), 4),
    )


def save_settings(new: RagcoreSettings, note: str) -> str:
    """Apply ``new`` to this session and write what changed to the settings file (never a key).

    Returns the message to show: what was saved, where, and which values the environment
    overrides at the next start."""
    from ragcore.settings.app_file import changed_values, save_app_settings

    ss = st.session_state
    old = base_settings()
    changes = changed_values(old, new)
    set_base_settings(new)
    if not changes:
        return f"{note}: nothing changed."
    path = save_app_settings(new.data_dir, changes)
    sources: dict[str, str] = ss.setdefault("rc_sources", {})
    overridden = [f"{k} ({sources[k].split('(')[-1].rstrip(')')})" for k in changes if sources.get(k, "").startswith("environment")]
    for k in changes:
        if not sources.get(k, "").startswith("environment"):
            sources[k] = "file"
    msg = f"{note}: saved in {path}, kept across reloads and restarts."
    if overridden:
        msg += " The environment sets " + ", ".join(overridden) + ": it wins again at the next start."
    return msg


def generator_name(s: RagcoreSettings) -> str:
    if not s.llm.configured:
        return "extractive"
    try:
        from ragcore.synthesis.llm.generator import OpenAIGenerator

        return OpenAIGenerator(s.llm).name
    except Exception:  # noqa: BLE001
        return f"openai-{s.llm.api}:{s.llm.model}"


def bound(widget: Callable[..., Any], label: str, canon: str, *, key: str, **kwargs: Any) -> Any:
    """A widget whose value lives in ``st.session_state[canon]`` and survives page switches.

    Several widgets (the sidebar's and a page's) may be bound to the same value; moving one
    moves the others on the next rerun.
    """
    ss = st.session_state
    pushed = f"_bound_{key}"  # the canonical value last written into this widget
    if ss.get(key) is not None and ss.get(pushed, object()) == ss[canon] and ss[key] != ss[canon]:
        # The widget holds a value of its own that no callback carried over (fast moves on a busy
        # machine: a run interrupted by the next key press), and nothing else moved the canonical
        # value since it was written here. The browser shows the widget's value: adopt it, or the
        # page would show one threshold and use another.
        ss[canon] = ss[key]
    # Written on every run, not only on the first: a widget the browser has not mounted yet (inside
    # a closed popover) takes its value from the run that mounts it; without this it would start
    # from the widget's default and send that back as the user's choice.
    ss[key] = ss[canon]
    ss[pushed] = ss[canon]

    def sync() -> None:
        value = ss[key]
        if value is not None:
            ss[canon] = value
            ss[pushed] = value

    return widget(label, key=key, on_change=sync, **kwargs)


def context_mode_control(
    key: str, *, label: str = "Context", options: tuple[str, ...] = CONTEXT_MODES, help: str | None = None,
    canon: str = "cfg_context",
) -> str:
    ss = st.session_state
    if ss.get(canon) not in options:
        ss[canon] = options[0]
    return bound(
        st.segmented_control, label, canon, key=key, options=list(options), required=True,
        format_func=lambda m: CONTEXT_LABELS[m], help=help or "Full corpus retrieves from the collection; "
        "Selected text answers only from the passage you selected; Both uses the passage first, then the corpus.",
    )


def retrieval_mode_control(key: str, *, label: str = "Retrieval", canon: str = "cfg_mode") -> str:
    return bound(
        st.segmented_control, label, canon, key=key, options=list(RETRIEVAL_MODES), required=True,
        help="hybrid fuses dense (cosine) and sparse (BM25) rankings; dense ranks by cosine; sparse by BM25.",
    )


def top_k_control(key: str, canon: str = "cfg_top_k") -> int:
    return bound(st.slider, "Top-K", canon, key=key, min_value=1, max_value=TOP_K_MAX, step=1,
                 help="How many chunks are kept as numbered evidence [1..K].")


def threshold_control(key: str, canon: str = "cfg_threshold") -> float:
    lo, hi, step = catalog.widget_range("threshold")
    return bound(st.slider, "Threshold (cosine)", canon, key=key, min_value=lo, max_value=hi, step=step,
                 format="%.2f", help="Chunks whose cosine similarity to the question is below this are cut, in every mode.")


# --------------------------------------------------------------------------- sidebar


def sidebar(rt: Runtime) -> None:
    """The collection (shared by every page), its state, the generator and a running ingest.

    Context, retrieval mode, top-K and the threshold are the notebook's own controls (above its
    question box), and the lab has its own: one set of controls per job.
    """
    ss = st.session_state
    with st.sidebar:
        job_status(rt)
        try:
            cols = rt.collections()
        except Exception as exc:  # noqa: BLE001
            show_error(exc, "Listing the collections")
            cols = []
        names = [c.name for c in cols]
        if names:
            if ss["cfg_collection"] not in names:
                ss["cfg_collection"] = DEMO_COLLECTION if DEMO_COLLECTION in names else names[0]
            bound(st.selectbox, "Collection", "cfg_collection", key="sb_collection", options=names)
            share_collection(ss["cfg_collection"])
            info = next(c for c in cols if c.name == ss["cfg_collection"])
            ensure_warm(rt, info)
            built = (info.built_at or "").replace("T", " ").replace("+00:00", " UTC")
            st.caption(
                f"{info.documents} documents · {info.chunks} chunks · version {md_code(info.corpus_version or '–')}"
                + (f"  \nbuilt {md_inline(built)}" if built else "")
            )
            stale = rt.staleness(info.name)
            if stale is not None and stale.stale:
                st.caption(f":orange-badge[:material/sync_problem: out of date] {md_inline(stale.summary())}")
        elif rt.job is None or not rt.job.running:
            st.info("No collection yet. Ingest a folder or files on the Library page.", icon=":material/info:")
        s = settings()
        gen = generator_name(s)
        st.markdown("**Generator** " + (f":green-badge[{md_inline(gen)}]" if s.llm.configured else ":gray-badge[extractive]"))
        if not s.llm.configured:
            st.caption("Quotes the evidence; no model needed. Connect an LLM on the Settings page.")


def share_collection(name: str) -> None:
    """The URL names the collection, so a reload (or a copied link) opens the same one."""
    from .share import set_param

    set_param("collection", name)


def job_status(rt: Runtime) -> None:
    """A running ingest in the sidebar of every page, refreshed each second on its own (a
    fragment), and a notification when it ends — the rest of the app stays usable meanwhile."""
    job = rt.job
    running = job is not None and job.running

    @st.fragment(run_every=1.0 if running else None)
    def draw() -> None:
        ss = st.session_state
        j = rt.job
        if j is None:
            return
        if j.running:
            st.progress(j.fraction, text=f"Ingesting into **{md_inline(j.collection)}**")
            st.caption(md_inline(j.status_line()))
            return
        if running:  # it ended while this fragment was refreshing: redraw the whole app (collections changed)
            st.rerun(scope="app")
        if ss.get("rc_job_seen") == j.id:
            return
        ss["rc_job_seen"] = j.id
        if ss.get("rc_job_watch") == j.id:  # this session saw it running: tell it how it ended
            st.toast(job_outcome(j), icon=":material/task_alt:" if j.report else ":material/info:")
        if ss.get("ing_mine") == j.id and j.report is not None:  # this session started it: open what it built
            ss["cfg_collection"] = j.collection

    draw()
    if running:
        st.session_state["rc_job_watch"] = job.id


def start_folder_ingest(
    rt: Runtime, folder: Path, collection: str, s: RagcoreSettings, *, rebuild: bool = False, label: str | None = None,
) -> IngestJob:
    """Ingest a folder into ``collection`` in the background (see ui/jobs.py)."""
    from ragcore.ingest.run import discover

    root, files = discover([folder])
    sizes: dict[str, int] = {}
    for f in files:
        try:
            sizes[f.rel] = f.path.stat().st_size if f.path is not None else 0
        except OSError:
            sizes[f.rel] = 0
    job = IngestJob(collection=collection, label=label or f"Ingest of {folder}", root=str(root), sizes=sizes)

    def work(job: IngestJob) -> IngestReport:
        if rebuild and rt.engine.store.exists(collection):
            rt.engine.drop(collection)
        return rt.engine.ingest([folder], collection, progress=job.progress, chunk_progress=job.chunk_progress, settings=s)

    return rt.start_ingest(job, work)


def start_refresh(rt: Runtime, collection: str, root: str | None) -> IngestJob | None:
    """'Bring up to date': re-ingest the collection's own folder (unchanged files are skipped)."""
    if not root or not Path(root).is_dir():
        return None
    s = settings().with_(collection=collection)
    info = rt.info(collection)
    built = dict(info.settings or {}) if info is not None else {}
    if built.get("chunk_size") and built.get("chunk_overlap") is not None:  # keep the collection's own chunking
        s = s.with_(chunk_size=int(built["chunk_size"]), chunk_overlap=int(built["chunk_overlap"]))
    return start_folder_ingest(rt, Path(root), collection, s, label=f"Update from {root}")


def job_outcome(job: IngestJob) -> str:
    if job.report is not None:
        r = job.report
        return (f"Ingest into '{job.collection}' done: {r.count('added')} added, {r.count('updated')} updated, "
                f"{r.count('removed')} removed, {len(r.failed)} skipped, {r.chunks_written} chunks in {r.seconds:.0f} s.")
    if job.cancelled:
        return job.cancel_summary()
    return job.error or "The ingest ended."


# --------------------------------------------------------------------------- notebooks


def load_notebook(rt: Runtime, collection: str) -> Notebook:
    """The collection's notebook, re-read from disk only when the file changed."""
    ss = st.session_state
    inflight = ss.get("rc_inflight")
    if inflight is not None and not inflight.is_set():
        inflight.wait(timeout=5)  # a stopped answer of the previous run is still being saved
    store = rt.notebooks
    cache: dict[str, tuple[Any, Notebook]] = ss.setdefault("rc_nb_cache", {})
    sig = store.signature(collection)
    hit = cache.get(collection)
    if hit is not None and hit[0] == sig and sig is not None:
        return hit[1]
    try:
        nb = store.load(collection)
    except NotebookError as exc:
        st.warning(md_escape(str(exc)))
        nb = Notebook(collection)
    cache[collection] = (store.signature(collection), nb)
    return nb


def remember_notebook(rt: Runtime, nb: Notebook) -> None:
    ss = st.session_state
    ss.setdefault("rc_nb_cache", {})[nb.collection] = (rt.notebooks.signature(nb.collection), nb)
