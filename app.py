"""ragcore — a research notebook for grounded question answering (Streamlit entry point).

    streamlit run app.py

One Engine per process (``st.cache_resource``), so the embedded Qdrant folder is opened once;
on first start the user guide in docs/ is ingested into the collection "guide". Pages are
registered with ``st.navigation`` and listed in the shared sidebar by ui/shell.py, which also
explains why Streamlit's own navigation is switched off in .streamlit/config.toml.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from ui.shell import run_app  # noqa: E402

run_app()
