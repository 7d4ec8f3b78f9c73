"""The process-wide runtime (one Engine per process and data directory), the settings it starts from,
and the one way the app shows an error."""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from ragcore.engine.engine import Engine
from ragcore.settings.app_file import LoadedSettings, load_app_settings
from ragcore.settings.config import ConfigError, RagcoreSettings
from ragcore.storage.store import StoreError

from .render import md_escape
from .runtime import Runtime, friendly


@st.cache_resource(show_spinner=False)
def get_runtime(data_dir: str, qdrant_url: str | None) -> Runtime:
    """One Engine per process and data directory. Questions read the collections' query snapshots,
    so the app does not hold embedded Qdrant's folder lock: ``ragcore ingest`` can write meanwhile,
    and the next question here reads the new snapshot."""
    settings = load_settings(data_dir).settings.with_(qdrant_url=qdrant_url)
    Path(settings.data_dir).mkdir(parents=True, exist_ok=True)  # an unusable folder fails here, clearly
    engine = Engine(settings)
    return Runtime(engine=engine, settings=settings)


def load_settings(data_dir: str | Path) -> LoadedSettings:
    """The one resolver's settings for this data folder: defaults, its settings file, .streamlit/secrets.toml
    (top-level RAGCORE_* / OPENAI_* entries and the endpoint's tables), then the environment. An unusable
    file entry is skipped and listed in ``problems`` (the Settings page shows them)."""
    return load_app_settings(data_dir, secrets_toml=True)


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
