"""The Streamlit app's own code, shared by app.py and pages/ (``ragcore`` never imports Streamlit).

``ui.shell``: the page registry, the navigation and the frame every page runs in;
``ui.state``: the process-wide engine, session settings and the shared sidebar;
``ui.notebook``: the notebook model, its store, run recording, diffs and exports (pure Python);
``ui.render``: escaping and rendering of answers, cells, evidence; ``ui.streaming``: running
``Engine.stream`` into a cell with a working Stop button; ``ui.viewer``: the source viewer;
``ui.probe``: the "why not retrieved?" probe's cells (the probe runs in ``ragcore.engine.probe``); ``ui.jobs``: a background ingest's
progress, ETA and Cancel (pure Python); ``ui.library_admin``: the Library's Collections and
Ingest tabs.
"""
