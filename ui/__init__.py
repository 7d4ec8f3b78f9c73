"""Streamlit helpers shared by app.py and pages/ (the only package that imports Streamlit).

``ui.state``: the process-wide engine, session settings and the shared sidebar;
``ui.render``: escaping and rendering of answers, cells, evidence; ``ui.streaming``: running
``Engine.stream`` into a cell with a working Stop button; ``ui.viewer``: the source viewer;
``ui.probe``: the "why not retrieved?" probe (pure Python).
"""
