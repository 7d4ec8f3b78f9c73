"""What the extractive composer can quote from one chunk: sentences, and sentences with the block
they introduce.

A chunk's text is read as the document's structure, not as a bag of sentences:

* prose sentences (``textutil.sentence_spans``); a heading is never quoted;
* blocks: fenced code, Markdown tables and reST literal blocks (kept whole by ``sentence_spans``),
  Markdown lists (bullet lines and their indented continuations; the HTML loader writes
  ``<ul>``/``<ol>`` that way too), and for HTML, runs of paragraphs that read as code (what
  ``<pre>`` leaves: lines that are not prose);
* a sentence that *introduces* a block (it ends with a colon, or says "the following" / "as
  follows") is only quotable together with the block right after it; without one (the chunk
  ends first, or what follows is prose) the sentence is not quotable at all;
* a prose sentence must be whole: it ends with . ! ? or : (optionally a closing bracket or
  quote), and the chunk's first sentence must not start mid-sentence (lower case);
* a sentence of a definition below its term (a ``<dl>`` entry as the HTML loader writes it: the
  term on a bullet line, the definition indented under it) is quoted from the term on, so it
  says what it defines; so is the first sentence after a one-paragraph name in HTML (a
  name/description table's row, which Sphinx writes as two paragraphs). A unit that opens on a
  term ("DEBUG", "-F <file>", "before_request(f)") records the term's length, and the answer
  shows the term on a line of its own;
* a table row is never prose: a table is quoted only as a table (its header, the delimiter
  row and the rows that matter), and a sentence holding `` | `` cell separators is not quoted.

Every unit keeps the chunk's character offsets of what it quotes, so the answer can be checked
against the source byte for byte (whitespace across line breaks in a sentence aside).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ragcore.textutil import LINE_BREAK, Span, normalize_ws, sentence_spans
from ragcore.types import Chunk

_BULLET = re.compile(r"^[ \t]*(?:[-*+•]|\d+[.)])[ \t]+")
_WHOLE = re.compile(r"""(?:[.!?:]|::)["'”’)\]`*_]*$""")
_INTRO = re.compile(r"(?::|\bthe following\b.*|\bas follows\b.*)$", re.I)
_LINEBREAK_WS = re.compile(r"[ \t]*\n\s*")
MAX_BLOCK_LINES = 40


@dataclass(frozen=True)
class QuoteBlock:
    kind: str  # "code" | "table" | "list"
    start: int  # chunk-text offsets of the quoted lines
    end: int
    text: str  # the Markdown to show: the source lines, fenced when the source had no fence


@dataclass(frozen=True)
class Unit:
    """One quotable thing: a sentence, a sentence with its block, or a table on its own."""

    start: int  # chunk-text offsets of the sentence (or of the table)
    end: int
    sentence: str  # the sentence's source text, line breaks folded; "" for a table on its own
    block: QuoteBlock | None = None
    item: bool = False  # a sentence of a list item
    term: int = 0  # a definition's term opens the sentence: its first ``term`` characters

    @property
    def plain(self) -> str:
        """What the unit says, for scoring."""
        return normalize_ws(f"{self.sentence} {self.block.text if self.block else ''}")


@dataclass(frozen=True)
class Picked:
    """A unit the composer scored: which evidence it is from, and how well it answers."""

    n: int  # the evidence number
    span: Span  # the quoted sentence (or table) in the chunk's text
    score: float
    unit: Unit | None = None  # what is quoted: the sentence and the block it brings


def fold(text: str) -> str:
    """A sentence as quoted: whitespace runs that cross a line break become one space."""
    return _LINEBREAK_WS.sub(" ", text.strip())


def units_of(chunk: Chunk) -> list[Unit]:
    text = chunk.text
    spans = sentence_spans(text)
    if chunk.kind == "pdf":
        spans = [piece for sp in spans for piece in _code_lines_apart(text, sp)]
    blocks = _blocks(text, spans, chunk.kind == "html", chunk.section)
    if chunk.kind == "pdf":
        blocks = sorted([*blocks, *pdf_listings(text)], key=lambda b: b.start)
        blocks = sorted([*blocks, *pdf_tables(text, blocks)], key=lambda b: b.start)
    out: list[Unit] = []
    for i, sp in enumerate(spans):
        if sp.heading or sp.block or _inside(sp, blocks, text):
            continue
        unit = _sentence_unit(text, sp, blocks, first=i == 0, section=chunk.section, html=chunk.kind == "html",
                              pdf=chunk.kind == "pdf")
        if unit is not None:
            out.append(unit)
    out.extend(Unit(b.start, b.end, "", b) for b in blocks if b.kind == "table")
    return out


def _sentence_unit(
    text: str, sp: Span, blocks: list[QuoteBlock], *, first: bool, section: tuple[str, ...], html: bool = False,
    pdf: bool = False,
) -> Unit | None:
    head = _term_of(text, sp, blocks)
    if head is not None and _other_block_between(text, head, sp.start):
        head = None  # quoted from the term on, a title between ("Note") would run into the prose
    if head is None and (html or pdf):
        head = _cell_term_of(text, sp, blocks, section)
    begin = sp.start if head is None else head
    raw = text[begin : sp.end]
    item = bool(_BULLET.match(raw))
    raw = _BULLET.sub("", raw, count=1) if item else raw
    sentence = fold(raw)
    if not sentence or sentence.rstrip(".:") in section or " | " in sentence or not _WHOLE.search(sentence):
        return None
    if first and sentence[:1].islower() and not item:
        return None  # the chunk starts inside a sentence
    start = begin + (len(text[begin : sp.end]) - len(raw))
    term = _term_length(raw) if begin == 0 or text[begin - 1] == "\n" else 0
    if pdf and not term and (begin == 0 or text[begin - 1] == "\n"):
        term = _inline_term(sentence)
    if not _INTRO.search(sentence):
        return Unit(start, sp.end, sentence, None, item, term)
    block = _block_after(text, sp.end, blocks)
    return Unit(start, sp.end, sentence, block, item, term) if block is not None else None


_PROSE_RUN = re.compile(r"(?:^|\s)[A-Za-z][a-z]*,? [a-z]+,? [a-z]+(?:\s|$)")  # three plain words in a row


def _term_length(raw: str) -> int:
    """How many characters of the folded sentence are a definition's term: the lines it opens on
    that read as names, as an HTML ``<dt>`` or an API entry leaves them ("DEBUG",
    "register_blueprint(blueprint, **options)", "-S[<keyid>]" then "--gpg-sign[=<keyid>]"), with
    the definition from a later line on. A line of wrapped prose is not a term (``_is_term_line``).
    0 when there is none."""
    lines = raw.split("\n")
    n = 0
    while n < len(lines) - 1 and (_is_term_line(lines[n].strip()) or _is_title_line(lines[n])):
        n += 1
    if n == 0 or not "".join(lines[n:]).strip():
        return 0
    return len(fold("\n".join(lines[:n])))


def _other_block_between(text: str, head: int, start: int) -> bool:
    """Between a definition's term (its lines from ``head``) and the sentence at ``start``, a line
    that ends another block with a hard line break (an admonition's "Note", a nested list's item)."""
    lines = text[head:start].split("\n")
    i = 0
    while i < len(lines) - 1 and (_is_term_line(_BULLET.sub("", lines[i]).strip()) or _is_title_line(lines[i])):
        i += 1
    return any(line.endswith(LINE_BREAK) for line in lines[i:-1])


def _is_title_line(line: str) -> bool:
    """A line the document ends as a block of its own, with its text going on below it: a
    ``<dt>`` term or an item's ``<p>`` title as the HTML loader writes them, ending in a hard line
    break ("concrete model", "Maximum length of a string", "statement –"); not a sentence."""
    stripped = line.strip()
    return line.endswith(LINE_BREAK) and 0 < len(stripped) <= MAX_TERM_CHARS and not _WHOLE.search(stripped)


def _is_term_line(line: str) -> bool:
    """One token ("DEBUG", "--no-gpg-sign"), or a signature: it ends on a closing bracket and
    has no run of plain words ("register_blueprint(blueprint, **options)", "-F <file>"; not
    "Flask provides test_cli_runner() to create a", nor "the setting (see below)")."""
    if not line or len(line) > MAX_TERM_CHARS or _WHOLE.search(line):
        return False
    return " " not in line or (line[-1] in ")]>" and not _PROSE_RUN.search(line))


# a PDF definition list's entry: the term, then its definition on the same line ("hasfigures This
# boolean sets…", "\toprule In the simplest of cases…", "-xasy Interactive mode…")
_INLINE_TERM = re.compile(r"(\\?-{0,2}[A-Za-z@][\w@.:-]*(?:\[[^\]\s]*\]|\{[^}\s]*\})*) (?=[A-Z][a-z])")


def _inline_term(sentence: str) -> int:
    """The length of the term a PDF paragraph opens on, before the capitalised sentence that
    defines it; 0 when it opens on prose. A term is a name, not a word that could start a
    sentence: lower case ("hasfigures"), a TeX macro ("\toprule"), an option ("-xasy") or dotted."""
    m = _INLINE_TERM.match(sentence)
    if m is None:
        return 0
    term = m.group(1)
    return len(term) if term[0] in "\\-" or term[0].islower() or re.search(r"[._@\[{]", term) else 0


MAX_TERM_CHARS = 80  # a definition list's term ("http.maxRequests", "-F <file>, --file=<file>")
MAX_ENTRY_CHARS = 500  # from the term to the end of the sentence quoted with it


def _term_of(text: str, sp: Span, blocks: list[QuoteBlock]) -> int | None:
    """For a sentence of a definition below its term (a list item whose first line is a term, not a
    sentence, as the HTML loader writes a ``<dl>`` entry), the offset of the term's line: quoted
    without it, "Can be overridden by the GIT_HTTP_MAX_REQUESTS environment variable." does not say
    what can. None for any other sentence, or when the entry up to the sentence is too long."""
    lb = next((b for b in blocks if b.kind == "list" and b.start <= sp.start < b.end), None)
    if lb is None:
        return None
    indent = None  # the text indent of the sentence's line: its item's bullet text starts there
    for a, b, line in reversed([ln for ln in _line_offsets(text) if lb.start <= ln[0] <= sp.start]):
        m = _BULLET.match(line)
        if indent is None and not (m and a <= sp.start <= b):
            indent = len(line) - len(line.lstrip())
        if m is None:
            continue  # a continuation line of the item: look further up for its bullet
        if indent is not None and len(line) - len(line.lstrip()) >= indent:
            continue  # a nested item above the sentence's own item's text: not its term
        term = line[m.end() :].strip()
        if a <= sp.start <= b or not term or _WHOLE.search(term) or len(term) > MAX_TERM_CHARS or sp.end - a > MAX_ENTRY_CHARS:
            return None  # the item's first sentence, or an item that opens on a sentence, or too long
        return a
    return None


# a name, not a word: dotted, underscored, a call or signature, an option, camelCase or ALL_CAPS
_NAME_LIKE = re.compile(r"^\\[A-Za-z@]+|^[A-Za-z_][\w.]*(?:[._]\w|\()|^--?\w|^[a-z]+[A-Z]|^[A-Z][A-Z0-9]*_[A-Z0-9_]+$|^(?:class|classmethod|staticmethod|exception|property|async) \w")
_CELL_TERM = re.compile(r"(?:^|\n[ \t]*\n)[ \t]*([^\n]+?)[ \t]*\n[ \t]*\n[ \t]*$")  # a one-line paragraph, then a blank line


def _cell_term_of(text: str, sp: Span, blocks: list[QuoteBlock], section: tuple[str, ...]) -> int | None:
    """For the first sentence of a paragraph right after a one-line paragraph that reads as a
    term, the term's offset: a two-column HTML table of names and what they are (Sphinx writes
    each ``<td><p>`` as a paragraph: "loop.previtem", then "The item from the previous iteration
    of the loop."). Quoted without it, the sentence does not say what it describes. A heading
    (a name of the chunk's sections), an admonition's title ("Note", "Warning": a plain word) and
    a line of code are not terms: a term here must look like a name of code or a setting."""
    m = _CELL_TERM.search(text, max(0, sp.start - MAX_TERM_CHARS - 8), sp.start)
    if m is None or m.end() != sp.start:
        return None  # no one-line paragraph right before
    if any(b.start <= m.start(1) < b.end for b in blocks):
        return None  # code: most often an example the sentence after it talks about, not a name
    term = m.group(1)
    if term in section or not _is_term_line(term) or not _NAME_LIKE.search(term) or sp.end - m.start(1) > MAX_ENTRY_CHARS:
        return None
    return m.start(1)


def _block_after(text: str, pos: int, blocks: list[QuoteBlock]) -> QuoteBlock | None:
    """The block that starts right after ``pos`` (only whitespace between), if any."""
    gap_end = pos + len(text[pos:]) - len(text[pos:].lstrip())
    return next((b for b in blocks if b.start <= gap_end and b.start >= pos), None)


def _inside(sp: Span, blocks: list[QuoteBlock], text: str) -> bool:
    """A sentence of a block other than a list (lists' sentences are quotable on their own)."""
    return any(b.kind != "list" and b.start <= sp.start < b.end for b in blocks)


# --------------------------------------------------------------------------- blocks


def _blocks(text: str, spans: list[Span], html: bool, section: tuple[str, ...]) -> list[QuoteBlock]:
    out = [_span_block(text, sp) for sp in spans if sp.block]
    out.extend(_list_blocks(text))
    if html:
        out.extend(_html_code(text, section))
    return sorted((b for b in out if b is not None), key=lambda b: b.start)


def _span_block(text: str, sp: Span) -> QuoteBlock | None:
    raw = text[sp.start : sp.end]
    lines = raw.split("\n")
    if sp.block == "table":
        return QuoteBlock("table", sp.start, sp.end, raw) if len(lines) >= 3 and _is_delimiter(lines[1]) else None
    stripped = raw.strip()
    fenced = stripped.startswith(("```", "~~~"))
    if fenced and (len(lines) < 2 or not lines[-1].strip().startswith(stripped[:3])):
        return None  # the chunk ends inside the fence: the block is not whole
    if len(lines) > MAX_BLOCK_LINES:
        return None
    return QuoteBlock("code", sp.start, sp.end, raw if fenced else f"```\n{raw}\n```")


_ROW_WORDS = 10  # a PDF table's row: a few cells, not a line of prose
_LEADER_OR_END = re.compile(r"…|[A-Za-z][.!?:][\"'”’)\]]*$")  # an index entry's leader, or a sentence's end
PDF_TABLE = "```pdf-table"  # the fence a PDF table is shown in: its lines as the page has them


def pdf_tables(text: str, blocks: list[QuoteBlock]) -> list[QuoteBlock]:
    """A PDF's tables: its text keeps one line per row but loses the columns, so a paragraph of
    short lines, most of them holding a number, none ending a sentence, is a table, its first
    lines without a number its header ("Animal Description Price ($)" over "Gnu stuffed 92.50").
    Quoted as it stands on the page, fenced, so the rows stay rows (``composer._trimmed`` keeps
    the header and the rows that match)."""
    out: list[QuoteBlock] = []
    pos = 0
    for m in re.finditer(r"\n[ \t]*\n|\Z", text):
        a, b = pos, m.start()
        pos = m.end()
        lines = [ln.strip() for ln in text[a:b].split("\n") if ln.strip()]
        head = table_head(lines)
        rows = lines[head:]
        if (len(rows) < 2 or head > 3 or any(len(r.split()) > _ROW_WORDS or _LEADER_OR_END.search(r) for r in rows)
                or sum(any(ch.isdigit() for ch in r) for r in rows) < max(2, 0.6 * len(rows))
                or any(x.start < b and a < x.end for x in blocks)):
            continue
        a += len(text[a:b]) - len(text[a:b].lstrip())
        out.append(QuoteBlock("table", a, b, "\n".join([PDF_TABLE, *lines, "```"])))
    return out


_CODE_LINE = re.compile(r"[;{}]$|^[\w.]+ [\w.]+\(.*\);?$|^(?:\"[^\"]*\",?)+$")  # a statement, a signature, a list of strings


def _code_lines_apart(text: str, sp: Span) -> list[Span]:
    """A PDF loses the blank lines around a line of code, so one "sentence" ran from the prose
    before it through the code into the prose after ("…changed with the command:", "pen
    opacity(real opacity=1);", "The opacity can be varied from 0…operations:",
    "\"Compatible\",\"Normal\",…"). Lines that read as code (a statement, a signature, a list of
    strings; never a run of plain words) become code spans of their own, so the sentence before
    them introduces them."""
    if sp.block or sp.heading or "\n" not in text[sp.start : sp.end]:
        return [sp]
    out: list[Span] = []
    pos, code_from = sp.start, None
    for a, b, line in _line_offsets(text):
        if b <= sp.start or a >= sp.end:
            continue
        a, b = max(a, sp.start), min(b, sp.end)
        code = bool(_CODE_LINE.search(line.strip())) and not _PROSE_RUN.search(line)
        if code and code_from is None:
            code_from = a
            _piece(text, pos, a, None, out)
        elif not code and code_from is not None:
            _piece(text, code_from, a, "code", out)
            code_from, pos = None, a
    _piece(text, code_from if code_from is not None else pos, sp.end, "code" if code_from is not None else None, out)
    return out


def _piece(text: str, a: int, b: int, block: str | None, out: list[Span]) -> None:
    raw = text[a:b].rstrip()
    if raw.strip():
        lead = len(raw) - len(raw.lstrip())
        out.append(Span(a + lead, a + len(raw), normalize_ws(raw), block=block))


_LISTING_LINE = re.compile(r"^[ \t]*(\d{1,5})(?=\s|$)")


def pdf_listings(text: str) -> list[QuoteBlock]:
    """A PDF's numbered code listing (a .dtx source, the listings package): three or more lines
    numbered one after another ("244 \\def\\makeauthenticitypage{%", "245 \\par\\vfill"). Its text is
    code, not prose: run into one "sentence" it was quoted as if it said something."""
    out: list[QuoteBlock] = []
    run: list[tuple[int, int, str]] = []
    for a, b, line in [*_line_offsets(text), (len(text) + 1, len(text) + 1, "")]:
        m = _LISTING_LINE.match(line)
        if m is not None and (not run or int(m.group(1)) == int(_LISTING_LINE.match(run[-1][2]).group(1)) + 1):
            run.append((a, b, line))
            continue
        if len(run) >= 3:
            out.append(QuoteBlock("code", run[0][0], run[-1][1], f"```\n{text[run[0][0] : run[-1][1]]}\n```"))
        run = [(a, b, line)] if m is not None else []
    return out


def table_head(lines: list[str]) -> int:
    """How many of a PDF table's first lines are its header: those before the first with a number."""
    return next((i for i, ln in enumerate(lines) if any(ch.isdigit() for ch in ln)), len(lines))


def _is_delimiter(line: str) -> bool:
    return bool(re.fullmatch(r"\s*\|?(\s*:?-{3,}:?\s*\|)+\s*:?-*:?\s*\|?\s*", line))


def _line_offsets(text: str) -> list[tuple[int, int, str]]:
    out, pos = [], 0
    for line in text.split("\n"):
        out.append((pos, pos + len(line), line))
        pos += len(line) + 1
    return out


def _list_blocks(text: str) -> list[QuoteBlock]:
    """Markdown lists: bullet lines, their indented continuations, blank lines between items."""
    out: list[QuoteBlock] = []
    lines = _line_offsets(text)
    i = 0
    while i < len(lines):
        if not _BULLET.match(lines[i][2]):
            i += 1
            continue
        j, last = i, i
        while j < len(lines):
            line = lines[j][2]
            if _BULLET.match(line) or (line.strip() and line[:1].isspace()):
                last = j
            elif line.strip() or not (j + 1 < len(lines) and _BULLET.match(lines[j + 1][2])):
                break
            j += 1
        if last - i < MAX_BLOCK_LINES:
            out.append(QuoteBlock("list", lines[i][0], lines[last][1], text[lines[i][0] : lines[last][1]]))
        i = last + 1
    return out


_CODE_HINT = re.compile(r"^\s|^(?:>>>|\$ |\.\.\. )|[{}\[\];=]|\(.*\)$|[(,\\]$|^(?:from|import|class|def|return)\b|^#")


def _looks_like_code(par: str, section: tuple[str, ...]) -> bool:
    """An HTML paragraph that reads as code (what <pre> leaves), not as prose or a heading."""
    lines = [ln for ln in par.split("\n") if ln.strip()]
    if not lines or normalize_ws(par).rstrip(".:") in section:
        return False
    if any(_BULLET.match(ln) for ln in lines) and all(_BULLET.match(ln) or ln[:1].isspace() for ln in lines):
        return False  # a list as the HTML loader writes it (items' further lines are indented)
    if " | " in par and not any(_CODE_HINT.search(ln) for ln in lines):
        return False  # a table row
    if len(lines) == 1 and _is_prose_line(lines[0]):
        return False  # a paragraph on one line (pasted from a browser) with a ";" or "=" in its prose
    hinted = sum(bool(_CODE_HINT.search(ln)) for ln in lines)
    prose_end = bool(re.search(r"[.!?:][\"')\]]*$", lines[-1].strip())) and not lines[-1].strip().endswith("::")
    return hinted * 2 >= len(lines) and not (prose_end and len(par.split()) > 6 and hinted < len(lines))


def _is_prose_line(line: str) -> bool:
    """A long line of prose: not indented, no prompt, a run of plain words, a sentence's end."""
    stripped = line.strip()
    return (not line[:1].isspace() and len(stripped.split()) > 12 and bool(_PROSE_RUN.search(stripped))
            and not re.match(r"(?:>>>|\$ |\.\.\. |#)", stripped) and bool(re.search(r"[.!?]['\")\]]*$", stripped)))


def _html_code(text: str, section: tuple[str, ...]) -> list[QuoteBlock]:
    """Runs of code-like paragraphs (blank lines inside <pre> are paragraph breaks too)."""
    out: list[QuoteBlock] = []
    run: list[tuple[int, int]] = []
    pos = 0
    for m in re.finditer(r"\n\s*\n|\Z", text):
        a, b = pos, m.start()
        pos = m.end()
        if _looks_like_code(text[a:b], section):
            run.append((a, b))
            continue
        _close_run(text, run, out)
        run = []
    _close_run(text, run, out)
    return out


def _close_run(text: str, run: list[tuple[int, int]], out: list[QuoteBlock]) -> None:
    if not run:
        return
    a, b = run[0][0], run[-1][1]
    raw = text[a:b]
    if raw.count("\n") < MAX_BLOCK_LINES:
        out.append(QuoteBlock("code", a, b, f"```\n{raw}\n```"))
