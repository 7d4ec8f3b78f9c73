"""What the HTML extractor knows about elements: which tags are chrome, blocks, headings or
lists, which start tags close an open sibling (HTML's implied end tags), and the small records it
keeps while walking a page (open elements, lists, definition lists, headings)."""

from __future__ import annotations

import re

from ragcore import textutil

# Elements whose whole subtree is not document text.
_DROP_TAGS = frozenset(
    {
        "script", "style", "noscript", "template", "svg", "head", "nav", "header", "footer",
        "aside", "form", "button", "select", "textarea", "label", "iframe", "object", "canvas",
        "dialog", "map",
    }
)  # fmt: skip
_DROP_ROLES = frozenset({"navigation", "banner", "contentinfo", "search"})
_DROP_IDS = frozenset({"hd", "ft", "sidebar", "global-nav", "searchbox", "doc-versions"})
_DROP_CLASSES = frozenset(
    {
        # Sphinx chrome
        "sphinxsidebar", "sphinxsidebarwrapper", "related", "footer",
        # Django docs themes (old YUI theme and docs.djangoproject.com)
        "nav", "breadcrumbs", "breadcrumb", "back-to-top", "browse-horizontal",
        "browse-vertical", "skip-link",
        # tables of contents (DocBook, many themes): links to headings that follow anyway
        "toc",
    }
)  # fmt: skip
# Permalink markers next to headings ("¶", "#", "§"): only on <a href="#…">.
_PERMALINK_CLASSES = frozenset(
    {"headerlink", "header-anchor", "anchor-link", "anchorjs-link", "hash-link", "permalink",
     "anchor", "mark"}
)  # fmt: skip
_DISPLAY_NONE_RE = re.compile(r"display\s*:\s*none")

_MAIN_IDS = frozenset({"docs-content", "yui-main"})

_VOID = frozenset(
    {
        "area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param",
        "source", "track", "wbr", "keygen", "basefont", "bgsound", "frame",
    }
)  # fmt: skip
_HEADINGS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})
# Elements that start a new paragraph for the chunker (table cells do not: they join a row).
_BLOCKS = frozenset(
    {
        "address", "article", "blockquote", "body", "caption", "center", "dd", "details", "dir",
        "div", "dl", "dt", "fieldset", "figcaption", "figure", "hgroup", "hr", "html", "legend",
        "li", "listing", "main", "menu", "ol", "p", "pre", "section", "summary", "table",
        "tbody", "tfoot", "thead", "tr", "ul", "xmp", "plaintext",
    }
) | _HEADINGS  # fmt: skip

# HTML's "special" elements: where the search for an open <li>/<dt>/<dd> to close stops.
_SPECIAL = frozenset(
    {
        "applet", "article", "aside", "blockquote", "body", "button", "caption", "center",
        "dd", "details", "dir", "dl", "dt", "fieldset", "figcaption", "figure", "footer",
        "form", "header", "hgroup", "html", "iframe", "li", "listing", "main", "marquee",
        "menu", "nav", "noscript", "object", "ol", "pre", "section", "select", "summary",
        "table", "tbody", "td", "template", "textarea", "tfoot", "th", "thead", "tr", "ul",
        "xmp",
    }
) | _HEADINGS  # fmt: skip
# Start tags that close an open <p> ("has a p element in button scope" in the HTML spec).
_CLOSES_P = frozenset(
    {
        "address", "article", "aside", "blockquote", "center", "details", "dialog", "dir",
        "div", "dl", "fieldset", "figcaption", "figure", "footer", "form", "header", "hgroup",
        "hr", "main", "menu", "nav", "ol", "p", "pre", "section", "summary", "table", "ul",
        "listing", "xmp", "plaintext",
    }
) | _HEADINGS  # fmt: skip
_P_SCOPE = frozenset(
    {"applet", "caption", "html", "table", "td", "th", "marquee", "object", "template", "button"}
)
_TABLE_SCOPE = frozenset({"html", "table", "template"})
_LISTS = frozenset({"ul", "ol", "menu", "dir"})
_P = frozenset({"p"})
# A <title> in the body or in an <svg> does not name the page.
_NO_TITLE = frozenset({"body", "svg"})
# Browsers stop nesting at a fixed depth (Chromium: 512) and add deeper elements as siblings;
# so do we, which keeps every per-tag step bounded on hostile pages (100k nested <div>s).
MAX_DEPTH = 512
MAX_TITLE_CHARS = 200  # as loaders.MAX_TITLE_CHARS: a section title is copied into every chunk

# For each start tag whose previous sibling may be left open: (tags it closes, where to stop).
_IMPLIED: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    "li": (frozenset({"li"}), _SPECIAL - {"li"}),
    "dt": (frozenset({"dt", "dd"}), _SPECIAL - {"dt", "dd"}),
    "dd": (frozenset({"dt", "dd"}), _SPECIAL - {"dt", "dd"}),
    "tr": (frozenset({"tr"}), _TABLE_SCOPE | {"thead", "tbody", "tfoot"}),
    "td": (frozenset({"td", "th"}), _TABLE_SCOPE | {"tr"}),
    "th": (frozenset({"td", "th"}), _TABLE_SCOPE | {"tr"}),
    "thead": (frozenset({"thead", "tbody", "tfoot"}), _TABLE_SCOPE),
    "tbody": (frozenset({"thead", "tbody", "tfoot"}), _TABLE_SCOPE),
    "tfoot": (frozenset({"thead", "tbody", "tfoot"}), _TABLE_SCOPE),
    "option": (frozenset({"option"}), frozenset({"select", "datalist", "html"})),
    # <body> ends <head> (and an unclosed <title> in it) even when </head> is missing.
    "body": (frozenset({"head"}), frozenset({"html"})),
}


class _Open:
    """An open element on the tag stack, with what closing it has to undo."""

    __slots__ = ("tag", "skip", "main", "block", "section", "anchor", "heading", "hid", "list", "item", "dl")

    def __init__(self, tag: str) -> None:
        self.tag = tag
        self.skip = False  # chrome: its subtree is dropped
        self.main = False  # a main-content container
        self.block = False
        self.section = False  # a Sphinx-style section container (div.section, <section>)
        self.anchor: str | None = None  # the section container's id
        self.heading = 0  # 1..6 for h1..h6
        self.hid: str | None = None  # the heading's own id
        self.list = False  # a <ul>/<ol>: its items are written as a Markdown list
        self.item = False  # an <li>
        self.dl = False  # a <dl> written as entries (see _Dl)


class _List:
    """An open list: how its items are marked and where their markers stand."""

    __slots__ = ("ordered", "next", "indent")

    def __init__(self, ordered: bool, start: int, indent: str) -> None:
        self.ordered = ordered
        self.next = start  # the number of the next item of an ordered list
        self.indent = indent  # the enclosing item's text indent: nested lists go one level deeper


class _Dl:
    """An open definition list: where its current entry stands, and the marker to write.

    ``state``: "start" (no entry yet), "term" (in the entry's terms), "def" (in the first
    paragraph of the definition: indented under the term), "rest" (after it)."""

    __slots__ = ("state", "marker", "items", "first", "in_dd", "multi")

    def __init__(self, items: int) -> None:
        self.state = "start"
        self.marker: str | None = None
        self.items = items  # open list items where the <dl> stands (it is formatted only at 0)
        self.first: int | None = None  # index of the entry's first record (its marked term)
        self.in_dd = False
        self.multi = False  # the definition has more than its first paragraph


# ends an item's (or a definition list entry's) line where a block ended and the item goes on: a
# paragraph break would end the list's block, this ends only the sentence (textutil.sentence_spans)
LINE_BREAK = textutil.LINE_BREAK
_DL_INDENT = "  "  # under "- ": a term's further lines and its definition's first paragraph
# What may stand between a term and the first text of its definition without ending the entry.
_DL_GLUE = frozenset({"p", "div", "dd", "dt"})


class _Heading:
    __slots__ = ("level", "depth", "text", "hid")

    def __init__(self, level: int, depth: int, text: str, hid: str | None) -> None:
        self.level = level
        self.depth = depth  # number of section containers open where the heading stands
        self.text = text
        self.hid = hid


# A record is [no, text, section, anchor, in_main]; mutable so a heading can relabel its lines.
_Record = list


def _is_chrome(tag: str, attrs: list[tuple[str, str | None]]) -> bool:
    """Navigation, page furniture and invisible elements: never document text."""
    if tag in _DROP_TAGS:
        return True
    for key, value in attrs:
        if not value:
            if key == "hidden":
                return True
            continue
        if key == "class":
            classes = value.split()
            if not _DROP_CLASSES.isdisjoint(classes):
                return True
            if "contents" in classes and "topic" in classes:
                return True  # docutils' local table of contents: links to headings below
        elif key == "id":
            if value in _DROP_IDS:
                return True
        elif key == "role":
            if value in _DROP_ROLES:
                return True
        elif key == "aria-hidden":
            if value == "true":
                return True
        elif key == "style":
            if _DISPLAY_NONE_RE.search(value):
                return True
        elif key == "href" and tag == "a" and value == "#top":
            return True  # "Back to Top"
    if tag == "a" and (_attr(attrs, "href") or "").startswith("#"):
        if not _PERMALINK_CLASSES.isdisjoint((_attr(attrs, "class") or "").split()):
            return True
    return False


def _int(value: str | None, default: int | None) -> int | None:
    """An ``<ol start>`` / ``<li value>`` number; anything else is the default."""
    try:
        return int(value) if value is not None and len(value) < 10 else default
    except ValueError:
        return default


def _attr(attrs: list[tuple[str, str | None]], name: str) -> str | None:
    return next((value for key, value in attrs if key == name), None)
