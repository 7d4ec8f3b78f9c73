"""HTML to SourceLines that keep the original file's line numbers.

We use the stdlib :class:`html.parser.HTMLParser` (not a tree builder) because its
``getpos()`` tells the source line of every piece of text, which is what citations need, and
because one streaming pass is O(n). On top of it sits a small tag stack that knows just enough
of HTML's implied end tags (``<p>``, ``<li>``, ``<td>``…) for unclosed tags not to swallow
the rest of the page.

What comes out:
- one SourceLine per source line that carries visible text (inline elements on one line join;
  whitespace collapses, except inside ``<pre>`` where each line keeps its indentation);
- an empty SourceLine at block boundaries, so the chunker can see paragraph breaks;
- lists as Markdown lists: an item's first line starts with ``- `` (``<ul>``) or ``3. ``
  (``<ol>``, counting from its ``start``), its further lines are indented to the item's text,
  a nested list one level deeper, and no paragraph break inside a list. So a sentence that
  introduces a list ("login_required() does the following:") is followed by one block, as in
  Markdown, and the composer quotes the two together. Where a block in an item ends (a ``<p>``
  title, a nested list, a heading) and the item goes on, the line ends with Markdown's hard
  break (``LINE_BREAK``), where the sentence splitter ends a sentence: a title is not run into
  the text below it (nor a ``<dt>`` term into its definition). The markers and breaks are the
  only text added: every line still stands for its source line. A ``<pre>`` inside an item is a block of its
  own (a paragraph break before and after, its lines not indented): code is never run into the
  item's sentence, and what follows it in the item starts a new, unindented paragraph;
- definition lists (``<dl>``) the same way: an entry is one block, its first term marked
  ``- ``, further terms and the definition's first paragraph indented under it, so an option or
  setting and what it does are never cut apart ("- --all" / "  Tell the command to…"). The
  definition's further paragraphs, and a definition that starts with code or a list, follow as
  blocks of their own, unindented; and an entry whose definition has such further blocks is not
  marked as a list item (its terms and first paragraph stay one paragraph, unmarked);
- a table row's cells joined with `` | `` when they are one paragraph; a cell that starts after a
  block in the row (an admonition's "Note" icon cell, Sphinx's ``<td><p>``) is not prefixed
  with a separator that would read as a table row in prose;
- ``section`` = the h1..h6 path, ``anchor`` = the id of the innermost enclosing section;
- only the main content when the page marks one (``<main>``, ``[role=main]``, ``div.body``,
  Django's ``#docs-content`` / ``#yui-main``), and never page chrome (navigation, sidebars,
  headers, footers, scripts, "¶" permalinks).

Hostile pages stay linear: elements nest at most ``MAX_DEPTH`` deep (deeper ones become
siblings, as in browsers), open tags are counted so that implied end tags need no stack walk,
and a heading's text is cut to ``MAX_TITLE_CHARS`` (it is stored with every chunk).
"""

from __future__ import annotations

import html
from html.parser import HTMLParser

from ragcore.ingest.read.html_model import (  # noqa: F401
    _Record, LINE_BREAK, MAX_DEPTH, MAX_TITLE_CHARS, _BLOCKS, _CLOSES_P, _DL_GLUE, _DL_INDENT, _Dl, _HEADINGS, _Heading, _IMPLIED, _LISTS, _List, _MAIN_IDS, _NO_TITLE, _Open, _P, _P_SCOPE, _VOID, _attr, _int, _is_chrome,
)
from ragcore.ingest.read.html_chrome import drop_leading_chrome
from ragcore.types import SourceLine

__all__ = ["extract_html"]

class _Extractor(HTMLParser):
    def __init__(self) -> None:
        # Character references are decoded here, not by the parser: a decoded "&#10;" would
        # otherwise look like a line break and shift every line number after it.
        super().__init__(convert_charrefs=False)
        self.records: list[_Record] = []
        self.stack: list[_Open] = []
        self.open_tags: dict[str, int] = {}  # how many of each tag are on the stack
        self.skip = 0  # open dropped elements
        self.main = 0  # open main-content containers
        self.pre = 0  # open <pre> elements
        self.sections: list[_Open] = []  # open section containers, outermost first
        self.headings: list[_Heading] = []
        self.section: tuple[str, ...] = ()
        self.anchor: str | None = None
        # The source line being assembled.
        self.line_no = 0
        self.parts: list[str] = []
        self.line_pre = False
        self.link_chars = 0  # of the line being assembled, the characters inside <a> (html_chrome.py)
        # The heading being read: its text, and the first record it produced.
        self.heading_open: _Open | None = None
        self.heading_parts: list[str] = []
        self.heading_start = 0
        # Table rows: " | " goes between the cells of a row.
        self.row_has_text = False
        self.pending_sep = False
        self.title_parts: list[str] | None = None
        self.title: str | None = None
        # Lists: the open lists, the text indent of each open item (innermost last), and the
        # marker ("- ", "2. ") the next line of text starts with.
        self.lists: list[_List] = []
        self.items: list[str] = []
        self.marker: str | None = None
        # Definition lists, innermost last; ``glue``: block boundaries inside one entry (term to
        # term, term to definition) make no paragraph break until text comes.
        self.dls: list[_Dl] = []
        self.glue = False
        # A block ended inside a list, where no paragraph break is written: the next line of the
        # same item ends the last one with LINE_BREAK (a new item's marker line needs none).
        self.held_break = False

    # ------------------------------------------------------------------ lines

    def _flush(self) -> None:
        """Turn the line being assembled into a record."""
        if not self.line_no:
            return
        text = "".join(self.parts)
        text = text.rstrip() if self.line_pre else " ".join(text.split())
        if text:
            if self.held_break and self.marker is None and self.records and self.records[-1][1]:
                self.records[-1][1] += LINE_BREAK
            self.held_break = False
            text = self._list_prefix() + text
            self.records.append([self.line_no, text, self.section, self.anchor, self.main > 0, self.link_chars])
            self.glue = False
            dl = self.dls[-1] if self.dls else None
            if dl is not None and dl.in_dd and dl.state == "rest":
                dl.multi = True  # text after the definition's first paragraph
        elif self.line_pre:
            self._empty(self.line_no)  # a blank line inside <pre> is a paragraph break too
        self.line_no = 0
        self.parts = []

    def _list_prefix(self) -> str:
        """An item's first line starts with its marker, its further lines with its indent."""
        if self.marker is not None:
            marker, self.marker = self.marker, None
            return marker
        if self.items:
            return self.items[-1]
        dl = self._dl()
        if dl is None:
            return ""
        if dl.marker is not None:
            marker, dl.marker = dl.marker, None
            dl.first = len(self.records)
            return marker
        return _DL_INDENT if dl.state in ("term", "def") else ""

    def _dl(self) -> _Dl | None:
        """The definition list whose entries the text being read belongs to, if any."""
        dl = self.dls[-1] if self.dls else None
        return dl if dl is not None and len(self.items) == dl.items else None

    def _empty(self, no: int, force: bool = False) -> None:
        if (self.lists or self.items) and not force:
            self.held_break = not self.pre  # a blank line in <pre> is code's own
            return  # a list is one block: no paragraph break between or inside its items
        if self.glue:
            self.held_break = True  # the term ends its line (LINE_BREAK): it is not the definition's first words
            return  # inside one entry of a definition list
        dl = self._dl()
        if dl is not None and dl.state == "def":
            dl.state = "rest"  # the definition's first paragraph ends here
        if self.records and self.records[-1][1]:
            self.records.append([no, "", self.section, self.anchor, self.main > 0, 0])

    def _break(self, force: bool = False) -> None:
        """A block boundary: finish the current line and mark a paragraph break."""
        self._flush()
        self._empty(self.getpos()[0], force)

    def handle_entityref(self, name: str) -> None:
        text = html.unescape(f"&{name};")
        self._reference(text if text != f"&{name};" else f"&{name}")  # "AT&T" stays as is

    def handle_charref(self, name: str) -> None:
        self._reference(html.unescape(f"&#{name};"))

    def _reference(self, text: str) -> None:
        # A reference sits on one source line, whatever it decodes to.
        self.handle_data(text.replace("\r", " ").replace("\n", " "))

    def handle_data(self, data: str) -> None:
        if self.title_parts is not None:
            self.title_parts.append(data)
            return
        if self.skip:
            return
        first = self.getpos()[0]
        pre = self.pre > 0
        for k, seg in enumerate(data.split("\n")):
            no = first + k
            if k and self.heading_open is not None:
                self.heading_parts.append(" ")
            if not pre and (not seg or seg.isspace()):
                # Whitespace between inline elements still separates words on that line.
                if seg and self.line_no == no:
                    self.parts.append(" ")
                continue
            if self.line_no != no:
                self._flush()
                self.line_no = no
                self.line_pre = pre
            if self.pending_sep and seg.strip():
                self.parts.append(" | ")
                self.pending_sep = False
            self.parts.append(seg)
            if self.open_tags.get("a"):
                self.link_chars += len(seg.strip())
            if seg and not seg.isspace():
                self.row_has_text = True
            if self.heading_open is not None:
                self.heading_parts.append(seg)

    # ------------------------------------------------------------------ tags

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _IMPLIED:
            targets, stop = _IMPLIED[tag]
            self._close_open(targets, stop)
        elif tag in _CLOSES_P:
            self._close_open(_P, _P_SCOPE)
            if tag in _HEADINGS and self.stack and self.stack[-1].tag in _HEADINGS:
                self._pop()  # <h2>a<h3>b: headings do not nest
        if tag in _VOID:
            if not self.skip:
                if tag == "br" and self.line_no:
                    self.parts.append(" ")
                elif tag == "hr":
                    self._break()
            return
        if len(self.stack) >= MAX_DEPTH:
            self._pop()  # too deep: the new element becomes its would-be parent's sibling
        node = _Open(tag)
        if self.heading_open is not None and self.heading_open.hid is None and not self.skip:
            # <h2><a id="dns" class="mark">#</a>…</h2>: an id inside the heading names it.
            name = _attr(attrs, "name") if tag == "a" else None  # <a name="…">, the old way
            self.heading_open.hid = _attr(attrs, "id") or name
        if tag == "title" and self.title is None and not any(self.open_tags.get(t) for t in _NO_TITLE):
            self.title_parts = []  # <head> is dropped, but its <title> names the document
        elif self.skip:
            pass  # inside a dropped subtree: only keep the stack balanced
        elif _is_chrome(tag, attrs):
            node.skip = True
            if self.line_no and not self.line_pre:
                self.parts.append(" ")  # "a<nav>…</nav>b" must not read "ab"
        else:
            self._open(node, attrs)
        if node.skip:
            self.skip += 1
        self._push(node)

    def _push(self, node: _Open) -> None:
        self.stack.append(node)
        self.open_tags[node.tag] = self.open_tags.get(node.tag, 0) + 1

    def _open(self, node: _Open, attrs: list[tuple[str, str | None]]) -> None:
        tag = node.tag
        a = {k: v or "" for k, v in attrs}
        if tag in _BLOCKS:
            node.block = True
            self._before_block(tag)
            if tag == "pre" and self.items:
                self._break(force=True)  # code in a list item is a block of its own
                self.items[-1] = ""  # and the item's text after it a paragraph of its own
            else:
                self._break()
        ident = a.get("id", "")
        classes = a.get("class", "").split()
        if tag == "main" or a.get("role") == "main" or ident in _MAIN_IDS or (
            tag == "div" and "body" in classes
        ):
            node.main = True
            if not self.main:
                # Headings before the main content (a site banner's <h1>) are chrome too.
                self.headings = []
                self._refresh()
            self.main += 1
        if tag == "section" or (tag == "div" and "section" in classes):
            node.section = True
            node.anchor = ident or None
            self.sections.append(node)
            self._refresh()
        elif ident and self.sections and self.sections[-1].anchor == "s-" + ident:
            # Sphinx: <div class="section" id="s-foo"><span id="foo"></span>: prefer "foo".
            self.sections[-1].anchor = ident
            self._refresh()
        if tag in _HEADINGS:
            node.heading = int(tag[1])
            node.hid = ident or None
            self.heading_open = node
            self.heading_parts = []
            self.heading_start = len(self.records)
        elif tag == "pre":
            self.pre += 1
        elif tag == "tr":
            self.row_has_text = False
            self.pending_sep = False
        elif tag in ("td", "th") and self.row_has_text:
            # no separator at the start of a paragraph: the previous cell ended with a block
            self.pending_sep = bool(self.line_no or not self.records or self.records[-1][1])
        elif tag in _LISTS:
            node.list = True
            self.lists.append(_List(tag == "ol", _int(a.get("start"), 1), self.items[-1] if self.items else ""))
        elif tag == "li":
            node.item = True
            self._open_item(_int(a.get("value"), None))
        elif tag in ("dl", "dt", "dd"):
            self._open_dl_part(node)

    def _before_block(self, tag: str) -> None:
        """Before a block's paragraph break: does it start a new definition-list entry, or
        does it stand between a term and its definition's first text (no break then)?"""
        dl = self._dl()
        if dl is None or not self.glue:
            return
        if tag == "dt" and dl.state != "term":
            self.glue = False  # a new entry
        elif tag not in _DL_GLUE or (tag == "dd" and dl.state != "term"):
            self.glue = False  # code, a list, a table under the term: a block of its own

    def _open_dl_part(self, node: _Open) -> None:
        if node.tag == "dl":
            if not self.items:  # in a list item, a <dl>'s lines are the item's lines
                if self.dls and self.dls[-1].in_dd:
                    self.dls[-1].multi = True  # a nested <dl> is a further block of the definition
                node.dl = True
                self.dls.append(_Dl(0))
            return
        dl = self._dl()
        if dl is None:
            return
        if node.tag == "dt" and dl.state != "term":
            dl.state, dl.marker, dl.first = "term", "- ", None
        elif node.tag == "dd":
            dl.state = "def" if dl.state == "term" and self.glue else "rest"
            dl.in_dd, dl.multi = True, False

    def _open_item(self, value: int | None) -> None:
        lst = self.lists[-1] if self.lists else None  # a stray <li> is a one-item list
        if lst is not None and lst.ordered:
            number = value if value is not None else lst.next
            lst.next = number + 1
            marker = f"{number}. "
        else:
            marker = "- "
        indent = lst.indent if lst is not None else (self.items[-1] if self.items else "")
        self.marker = indent + marker
        self.items.append(indent + " " * len(marker))

    def handle_endtag(self, tag: str) -> None:
        if tag in _VOID or not self.open_tags.get(tag):
            return  # nothing to close: a stray end tag is ignored, as browsers do
        for i in range(len(self.stack) - 1, -1, -1):
            if self.stack[i].tag == tag:
                while len(self.stack) > i:
                    self._pop()
                return

    def _close_open(self, targets: frozenset[str], stop: frozenset[str]) -> None:
        """Close the nearest open element in ``targets`` unless an element in ``stop`` is nearer."""
        if not any(self.open_tags.get(t) for t in targets):
            return  # the common case, answered without walking the stack
        for i in range(len(self.stack) - 1, -1, -1):
            tag = self.stack[i].tag
            if tag in targets:
                while len(self.stack) > i:
                    self._pop()
                return
            if tag in stop:
                return

    def _pop(self) -> None:
        node = self.stack.pop()
        self.open_tags[node.tag] -= 1
        if node.tag == "title" and self.title_parts is not None:
            self.title = " ".join("".join(self.title_parts).split()) or None
            self.title_parts = None
        if node.skip:
            self.skip -= 1
            return
        if self.skip:
            return  # an element inside a dropped subtree changed nothing
        if node.heading:
            self._flush()
            self._close_heading(node)
        if node.item or node.list:
            # before the break below: closing the outermost list ends the list's block
            self._flush()
            self._close_list_part(node)
        if node.tag in ("dl", "dt", "dd"):
            self._close_dl_part(node)
        if node.block:
            self._break(force=node.tag == "pre" and bool(self.items))
        if node.tag == "pre":
            self.pre -= 1
        elif node.tag == "tr":
            self.row_has_text = False
            self.pending_sep = False
        if node.main:
            self.main -= 1
        if node.section:
            depth = len(self.sections)
            self.sections.pop()
            # Headings of a closed section no longer frame the text that follows.
            self.headings = [h for h in self.headings if h.depth < depth]
            self._refresh()

    def _close_dl_part(self, node: _Open) -> None:
        """Before the block break: a term's end glues it to what follows; a definition's or
        the list's end is a real paragraph break."""
        self._flush()
        if node.dl:
            self.dls.pop()
            self.glue = False
            return
        dl = self._dl()
        if dl is None:
            return
        if node.tag == "dt":
            self.glue = True
            return
        self.glue = False
        dl.state = "rest"
        if node.tag == "dd":
            dl.in_dd = False
            if dl.multi:
                self._unmark_entry(dl)

    def _unmark_entry(self, dl: _Dl) -> None:
        """A definition with more than one block (a paragraph then code, a nested list) is not
        written as a list item: a list item cannot hold it, and an item ending "…as:" would be
        cut from the code it introduces. Its terms and first paragraph stay one paragraph."""
        if dl.first is None:
            return
        for rec in self.records[dl.first :]:
            if not rec[1]:
                break
            rec[1] = rec[1][2:] if rec[1].startswith(("- ", _DL_INDENT)) else rec[1]
        dl.first = None

    def _close_list_part(self, node: _Open) -> None:
        if node.item:
            self.items.pop()
            self.marker = None  # an item without text leaves no marker behind
        else:
            self.lists.pop()

    def _close_heading(self, node: _Open) -> None:
        self.heading_open = None
        text = " ".join("".join(self.heading_parts).split())
        if len(text) > MAX_TITLE_CHARS:
            text = text[: MAX_TITLE_CHARS - 1].rstrip() + "…"
        if not text:
            return
        while self.headings and self.headings[-1].level >= node.heading:
            self.headings.pop()
        self.headings.append(_Heading(node.heading, len(self.sections), text, node.hid))
        self._refresh()
        # The heading's own lines belong to the section it opens.
        for rec in self.records[self.heading_start :]:
            rec[2] = self.section
            rec[3] = self.anchor

    def _refresh(self) -> None:
        """Recompute the heading path and the anchor after headings or sections changed."""
        self.section = tuple(h.text for h in self.headings)
        anchor: str | None = None
        # Innermost enclosing section first: its id, else the id of its own heading. A
        # container without a heading (a <section> used for console tabs) is not a section
        # of the document, so it is skipped.
        for depth in range(len(self.sections), -1, -1):
            own = [h for h in self.headings if h.depth == depth]
            if not own:
                continue
            if depth and self.sections[depth - 1].anchor:
                anchor = self.sections[depth - 1].anchor
                break
            hid = next((h.hid for h in reversed(own) if h.hid), None)
            if hid:
                anchor = hid
                break
        self.anchor = anchor

    def finish(self) -> tuple[list[SourceLine], str | None]:
        self.close()
        while self.stack:
            self._pop()
        self._flush()
        records = self.records
        if any(r[4] and r[1] for r in records):
            records = [r for r in records if r[4]]
        else:  # no main content marked: a link-dense banner and menu before the first heading is chrome
            records = drop_leading_chrome(records)
        lines: list[SourceLine] = []
        for no, text, section, anchor, _, _ in records:
            if not text and (not lines or not lines[-1].text):
                continue  # no leading or doubled paragraph breaks
            lines.append(SourceLine(no=no, text=text, section=section, anchor=anchor))
        while lines and not lines[-1].text:
            lines.pop()
        title = self.title
        if title is None:
            title = next((s[0] for s in (line.section for line in lines) if s), None)
        return lines, title


def extract_html(text: str) -> tuple[list[SourceLine], str | None]:
    """The visible text of an HTML page as SourceLines, and the page's <title>."""
    parser = _Extractor()
    parser.feed(text)
    return parser.finish()
