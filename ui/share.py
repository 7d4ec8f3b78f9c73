"""Shareable state: the collection, the selected cell and the lab's setup in the page's URL.

``st.query_params`` carries them, so a reload keeps the collection and a link reproduces a lab
setup or points at a cell. ``q`` is the question of the page the link opens: the lab's, or on the
notebook the selected cell's (the cell is scrolled to; when the notebook has no such cell, the
question is asked). Values read from a URL are validated and clamped like the widgets'
own (a hand-edited link cannot put the app in a state its controls could not reach); a value that
does not parse is ignored.
"""

from __future__ import annotations

import re
from typing import Any, Callable, Mapping

import streamlit as st

from ragcore.settings import catalog
from ui import session

# URL name → (session key, parse). The lab's controls (pages/retrieval_lab.py) keep their values in
# ``session.lab_key``'s keys; the link carries the settings catalog's ``share`` settings; ranges and choices
# are the catalog's, so a link reaches what a control reaches.


def _parser(field: str) -> Callable[[str], Any]:
    rule = catalog.entry(field).rule
    if rule.kind == "choice":
        return _choice(rule.choices)
    if rule.kind == "bool":
        return _bool
    if rule.kind == "int":
        return lambda v: catalog.clamp(field, int(v))
    return lambda v: catalog.clamp(field, float(v))


def _choice(options: tuple[str, ...]) -> Callable[[str], str]:
    def parse(v: str) -> str:
        if v not in options:
            raise ValueError(v)
        return v
    return parse


def _bool(v: str) -> bool:
    if v.lower() in ("1", "true", "on", "yes"):
        return True
    if v.lower() in ("0", "false", "off", "no"):
        return False
    raise ValueError(v)


LAB_PARAMS: dict[str, tuple[str, Callable[[str], Any]]] = {
    "q": ("lab_question", lambda v: v[:2000]),
    **{name: (session.lab_key(field), _parser(field)) for name, field in catalog.share_params().items()},
}
CELL_PARAM = "cell"
QUESTION_PARAM = "q"
SNAP_SECONDS = 4  # how long a linked cell holds the view while the notebook is drawn
MAX_URL_QUESTION = 2000  # the notebook's own limit (ui/cells.py MAX_QUESTION_CHARS)


def parse_params(params: Mapping[str, str]) -> dict[str, Any]:
    """The session values a URL's parameters set (the lab's setup, the selected cell); bad values dropped."""
    out: dict[str, Any] = {}
    for name, (key, parse) in LAB_PARAMS.items():
        raw = params.get(name)
        if raw is None or raw == "":
            continue
        try:
            out[key] = parse(str(raw))
        except (TypeError, ValueError):
            continue
    cell = params.get(CELL_PARAM)
    if cell and str(cell).isalnum() and len(str(cell)) <= 40:
        out["nb_selected_cell"] = str(cell)
    return out


def adopt_url(session: Any) -> bool:
    """An opened link or a reload starts a new session: on its first run, take the lab's setup and
    the selected cell from the URL. Returns whether this was that first run.

    Only then: later in a session the URL holds what the session itself wrote, or — while the browser
    has not yet caught up with a newer write — an older one. Adopting such an echo brought a lab's
    old threshold back (thr=0.0 after the slider had moved to 0.29), since a comparison with the last
    write cannot tell an echo from a new link. A link with the lab's setup or a cell opens a new
    session; the app's own links to the source viewer stay in the session and are read where they
    are used (the Library page; ui/state.py init_session for their collection)."""
    if session.get("rc_url_adopted"):
        return False
    session["rc_url_adopted"] = True
    params = dict(st.query_params)
    for key, value in parse_params(params).items():
        session[key] = value
    if "nb_selected_cell" in session:
        session["rc_url_cell"] = session["nb_selected_cell"]  # scrolled to when the link opens the notebook
    q = str(params.get(QUESTION_PARAM) or "").strip()[:MAX_URL_QUESTION]
    if q:
        session["rc_url_question"] = q  # for the notebook, when the link opens it (link_target)
    return True


def link_target(session: Any) -> tuple[str | None, str | None]:
    """The cell and the question of the link this session was opened with, once; app.py's frame
    drops them after the first page ran, so going to the notebook later does not ask a lab link's question."""
    return session.pop("rc_url_cell", None), session.pop("rc_url_question", None)


def notebook_params(cell_id: str | None, question: str | None) -> dict[str, str]:
    """The notebook's URL: the selected cell and its question (a link to it reproduces the question)."""
    if not cell_id:
        return {}
    out = {CELL_PARAM: cell_id}
    if question and len(question) <= MAX_URL_QUESTION:
        out[QUESTION_PARAM] = question
    return out


def scroll_to_cell_css(cell_id: str) -> str:
    """CSS that brings the cell ``cell_id`` into view as the page loads, without a script (the app
    runs none): the main area snaps to the cell while the page is drawn (a snap container re-snaps
    as content arrives), then snapping ends, so the analyst scrolls freely. The id is checked
    (letters and digits, as the notebook makes them)."""
    if not re.fullmatch(r"[A-Za-z0-9]{1,40}", cell_id):
        raise ValueError(f"not a cell id: {cell_id!r}")
    return ("<style>@keyframes rc-unsnap{to{scroll-snap-type:none}}"
            '[data-testid="stMain"]{scroll-snap-type:y mandatory;animation:rc-unsnap 1ms linear ' + str(SNAP_SECONDS) + "s forwards}"
            f".st-key-cell_{cell_id}_sel{{scroll-snap-align:start;scroll-margin-top:3.5rem}}</style>")


def lab_params(session: Mapping[str, Any], base: Any) -> dict[str, str]:
    """The lab's setup as URL parameters: the question and the cuts always, the rest when they
    differ from the settings (a short link for the usual case)."""
    out: dict[str, str] = {}
    always = ("q", "mode", "k", "thr")
    for name, (key, _) in LAB_PARAMS.items():
        if key not in session:
            continue
        v = session[key]
        field = key.removeprefix("lab_")
        if name not in always and getattr(base, field, None) == v:
            continue
        if name == "q" and not str(v).strip():
            continue
        out[name] = str(int(v) if isinstance(v, bool) else v)
    return out


def write(params: Mapping[str, str], *, keep: tuple[str, ...] = ("collection",)) -> None:
    """Make the URL say ``params`` (plus the kept ones); only what changed is sent to the browser."""
    qp = st.query_params
    current = {k: qp.get(k) for k in qp.keys()}
    wanted = {k: v for k, v in current.items() if k in keep}
    wanted.update({k: str(v) for k, v in params.items() if v is not None})
    if wanted != current:
        qp.from_dict(wanted)


def set_param(name: str, value: str | None) -> None:
    """One parameter of the URL set (or removed), the others left as they are."""
    qp = st.query_params
    if value is None:
        if name in qp:
            del qp[name]
    elif qp.get(name) != value:
        qp[name] = value
