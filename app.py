"""ragcore — a research notebook for grounded question answering (Streamlit entry point).

    streamlit run app.py

One Engine per process (``st.cache_resource``), so the embedded Qdrant folder is opened once;
on first start the user guide in docs/ is ingested into the collection "guide". Pages are
registered with ``st.navigation`` (so pages/ is not auto-discovered) and share the sidebar.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import streamlit as st  # noqa: E402

from ui import state  # noqa: E402

state.leave_pages_folder_mode()
st.set_page_config(page_title="ragcore — research notebook", page_icon=":material/menu_book:", layout="wide")

rt = state.runtime()
state.ensure_demo(rt)
state.init_session(rt)

pages = [
    st.Page("pages/notebook.py", title="Notebook", icon=":material/edit_note:", url_path="notebook", default=True),
    st.Page("pages/retrieval_lab.py", title="Retrieval lab", icon=":material/science:", url_path="retrieval_lab"),
    st.Page("pages/library.py", title="Library", icon=":material/library_books:", url_path="library"),
    st.Page("pages/evaluate.py", title="Evaluate", icon=":material/analytics:", url_path="evaluate"),
    st.Page("pages/settings.py", title="Settings", icon=":material/tune:", url_path="settings"),
]
page = st.navigation(pages)
state.sidebar(rt)
page.run()
