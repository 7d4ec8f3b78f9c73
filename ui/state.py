"""The app's session layer, one import for pages and ui modules (``from ui import state``). Each job
lives in its own module; this one names them:

- ui/process.py: the process-wide runtime (one Engine per process), the settings file, errors shown;
- ui/session_settings.py: this session's settings and saving them;
- ui/controls.py: widgets bound to a session value (``bound``) and the shared retrieval controls;
- ui/sidebar.py: the sidebar of every page and a running ingest's status;
- ui/ingest_start.py: starting a background ingest;
- ui/nbcache.py: the notebooks read in this session;
- ui/session.py: the typed view of the session's values (the lab's setup, the notebook's controls).
"""

from __future__ import annotations

from .controls import (  # noqa: F401
    CONTEXT_LABELS, CONTEXT_MODES, RETRIEVAL_MODES, TOP_K_MAX, bound, context_mode_control, retrieval_mode_control,
    threshold_control, top_k_control,
)
from .firststart import _copy_old_store, ensure_demo  # noqa: F401 - the app's frame and tests use them from here
from .ingest_start import start_folder_ingest, start_refresh  # noqa: F401
from .nbcache import load_notebook, remember_notebook  # noqa: F401
from .process import get_runtime, load_settings, runtime, show_error  # noqa: F401
from .runtime import Runtime, friendly  # noqa: F401 - pages and ui modules use them from here
from .session_settings import (  # noqa: F401
    base_settings, generator_name, init_session, save_settings, set_base_settings, settings,
)
from .sidebar import job_outcome, job_status, share_collection, sidebar  # noqa: F401
