"""Turn files into :class:`LoadedDocument`: dispatch by suffix, decode, split into SourceLines.

Every loader keeps the line numbers of the original file, because citations point at them.
Text, Markdown, reST and code keep each line verbatim (only section/anchor are derived);
HTML and PDF live in their own modules (:mod:`.html`, :mod:`.pdf`) and are imported lazily so
that importing this module stays cheap.

Anything that cannot be turned into text raises :class:`LoadError` with a short reason that
the ingest report shows to the user as is.
"""

from __future__ import annotations

import codecs
import errno
import hashlib
import os
import re
import stat
import unicodedata
from pathlib import Path
from typing import Callable

from ragcore.types import DocKind, LoadedDocument, SourceLine

__all__ = [
    "LoadError",
    "LineLimitError",
    "MAX_TITLE_CHARS",
    "file_type_name",
    "read_bytes",
    "SUPPORTED_SUFFIXES",
    "kind_for",
    "load_file",
    "load_bytes",
    "decode_text",
    "github_slug",
    "docutils_slug",
]


class LoadError(Exception):
    """A file could not be turned into text; ``reason`` is short and meant for humans."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class LineLimitError(LoadError):
    """The file has more lines of text than the caller's ``max_lines``."""

    def __init__(self, lines: int, limit: int) -> None:
        super().__init__(f"too large: {lines:,} lines of text, over the limit of {limit:,} lines")
        self.lines, self.limit = lines, limit


# --------------------------------------------------------------------------- suffixes

_MARKDOWN = frozenset({".md", ".markdown", ".mdown", ".mkd"})
_RST = frozenset({".rst", ".rest"})
_TEXT = frozenset({".txt", ".text"})
_HTML = frozenset({".html", ".htm", ".xhtml"})
_PDF = frozenset({".pdf"})
_CODE = frozenset(
    {
        ".py", ".pyi", ".js", ".mjs", ".cjs", ".ts", ".tsx", ".jsx", ".java", ".go", ".rs",
        ".c", ".cc", ".cpp", ".cxx", ".h", ".hh", ".hpp", ".cs", ".rb", ".php", ".sh",
        ".bash", ".zsh", ".sql", ".yaml", ".yml", ".toml", ".json", ".css", ".scss", ".kt",
        ".kts", ".swift", ".scala", ".lua", ".r", ".pl", ".ini", ".cfg", ".xml", ".vue",
        ".dart", ".ex", ".exs", ".hs", ".ml", ".m", ".proto", ".graphql",
    }
)  # fmt: skip

_KIND_BY_SUFFIX: dict[str, DocKind] = {
    **{s: "markdown" for s in _MARKDOWN},
    **{s: "rst" for s in _RST},
    **{s: "text" for s in _TEXT},
    **{s: "html" for s in _HTML},
    **{s: "pdf" for s in _PDF},
    **{s: "code" for s in _CODE},
}

SUPPORTED_SUFFIXES: frozenset[str] = frozenset(_KIND_BY_SUFFIX)


def kind_for(path: Path | str) -> DocKind | None:
    """The document kind for a file name, or None when ingestion should skip it silently."""
    return _KIND_BY_SUFFIX.get(Path(path).suffix.lower())


# --------------------------------------------------------------------------- entry points


def load_file(path: Path, root: Path, *, max_bytes: int) -> LoadedDocument:
    """Load ``path``; the document's path is relative to ``root`` with POSIX separators."""
    rel = _relative_posix(path, root)
    if kind_for(path) is None:
        raise LoadError(f"unsupported file type {path.suffix or '(no suffix)'!r}")
    return load_bytes(read_bytes(path, max_bytes=max_bytes), rel, max_bytes=max_bytes)


def read_bytes(path: Path, *, max_bytes: int, follow_symlinks: bool = True) -> bytes:
    """A regular file's bytes, or LoadError with a reason (too big, not a file, unreadable).

    The file is opened non-blocking and checked on the opened descriptor, so a FIFO, socket or
    device never blocks or streams forever, and a file swapped for one after discovery is
    caught. The size limit is enforced while reading (at most ``max_bytes + 1`` bytes are
    read): ``stat`` sizes lie for /proc files, devices and files that grow.
    """
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    if not follow_symlinks:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise LoadError(_open_reason(path, exc)) from exc
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise LoadError(_not_regular(st.st_mode))
        if st.st_size > max_bytes:
            raise LoadError(_too_big(st.st_size, max_bytes))
        f = os.fdopen(fd, "rb", buffering=0)
    except BaseException:
        os.close(fd)
        raise
    with f:
        try:
            data = _read_at_most(f, max_bytes + 1)
        except OSError as exc:
            raise LoadError(os_reason(exc)) from exc
    if len(data) > max_bytes:
        raise LoadError(f"file is over the {_human_size(max_bytes)} limit (it grew while being read)")
    return data


def _not_regular(mode: int) -> str:
    return "is a directory" if stat.S_ISDIR(mode) else f"not a regular file ({file_type_name(mode)})"


def _read_at_most(f, limit: int) -> bytes:
    parts: list[bytes] = []
    left = limit
    while left > 0:
        part = f.read(min(left, 1 << 20))
        if not part:
            break
        parts.append(part)
        left -= len(part)
    return b"".join(parts)


def file_type_name(mode: int) -> str:
    """What a non-regular file is, in words for the ingest report."""
    for test, name in (
        (stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"), (stat.S_ISLNK, "a symlink"),
    ):  # fmt: skip
        if test(mode):
            return name
    return "a special file"


def load_bytes(
    data: bytes, rel_path: str, *, max_bytes: int | None = None, max_lines: int | None = None
) -> LoadedDocument:
    """Load an uploaded file's bytes; ``rel_path`` names it (and decides its kind by suffix).

    ``max_lines`` refuses a text file with more non-blank lines than that before any line is
    turned into a SourceLine (a 20 MB file of one-character lines would otherwise cost GBs).
    """
    kind = kind_for(rel_path)
    if kind is None:
        raise LoadError(f"unsupported file type {Path(rel_path).suffix or '(no suffix)'!r}")
    if not data:
        raise LoadError("empty file")
    if max_bytes is not None and len(data) > max_bytes:
        raise LoadError(_too_big(len(data), max_bytes))
    doc_hash = hashlib.sha256(data).hexdigest()
    if kind == "pdf":
        from ragcore.ingest.read.pdf import PdfError, extract_pdf  # lazy: pypdf is only needed for PDFs

        try:
            lines, title = extract_pdf(data)
        except PdfError as exc:
            raise LoadError(exc.reason) from None
    else:
        text = decode_text(data)
        if not text.strip():
            raise LoadError("no text in file (only whitespace)")
        if max_lines is not None and kind != "html":  # HTML lines are mostly markup
            _check_line_count(text, max_lines)
        lines, title = _load_text(text, kind, rel_path)
    if max_lines is not None:
        _check_line_count_loaded(lines, max_lines)
    return LoadedDocument(
        path=rel_path, kind=kind, doc_hash=doc_hash, lines=tuple(lines), title=title
    )


def _load_text(text: str, kind: DocKind, rel_path: str) -> tuple[list[SourceLine], str | None]:
    if kind == "html":
        from ragcore.ingest.read.html import extract_html

        try:
            lines, title = extract_html(text)
        except Exception as exc:  # HTMLParser is lenient; this is a last resort
            raise LoadError(f"could not parse HTML: {exc}") from exc
        if not any(line.text.strip() for line in lines):
            raise LoadError("HTML has no visible text")
        return lines, title
    if kind == "code" and Path(rel_path).suffix.lower() in (".py", ".pyi"):
        return _load_python(split_lines(text))
    return _LINE_LOADERS[kind](split_lines(text))


_BLANK_LINE_RE = re.compile(r"^[ \t\r\f\v]*$", re.MULTILINE)


def _check_line_count(text: str, max_lines: int) -> None:
    """Refuse a text with more than ``max_lines`` non-blank lines, counted without splitting it."""
    n = text.count("\n") + 1
    if n <= max_lines:
        return  # the common case costs one count()
    nonblank = n - sum(1 for _ in _BLANK_LINE_RE.finditer(text))
    if nonblank > max_lines:
        raise LineLimitError(nonblank, max_lines)


def _check_line_count_loaded(lines: list[SourceLine], max_lines: int) -> None:
    nonblank = sum(1 for line in lines if line.text.strip())
    if nonblank > max_lines:
        raise LineLimitError(nonblank, max_lines)


def _relative_posix(path: Path, root: Path) -> str:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        # One side may be relative or go through a symlink; compare resolved paths.
        try:
            return path.resolve().relative_to(root.resolve()).as_posix()
        except ValueError:
            raise LoadError(f"{path} is outside the ingest root {root}") from None


def _open_reason(path: Path, exc: OSError) -> str:
    """Why ``open`` failed; a socket (ENXIO) or an odd device is named as what it is."""
    if exc.errno not in (errno.ENXIO, errno.ENODEV, errno.EOPNOTSUPP):
        return os_reason(exc)
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return os_reason(exc)
    return os_reason(exc) if stat.S_ISREG(mode) else _not_regular(mode)


def os_reason(exc: OSError) -> str:
    """Why a file or folder could not be read, in the words every ingest message uses (the loaders'
    and discovery's, ingest/writer.py)."""
    if exc.errno == errno.ELOOP:
        return "is a symlink (not followed)"
    if isinstance(exc, PermissionError):
        return "permission denied"
    if isinstance(exc, IsADirectoryError):
        return "is a directory"
    if isinstance(exc, FileNotFoundError):
        return "file not found"
    return exc.strerror or str(exc)  # the system's own words ("Input/output error")


def _human_size(n: int) -> str:
    if n >= 1_000_000:
        return f"{n / 1_000_000:.1f} MB"
    if n >= 1_000:
        return f"{n / 1_000:.1f} KB"
    return f"{n} bytes"


def _too_big(size: int, limit: int) -> str:
    return f"file is {_human_size(size)}, over the {_human_size(limit)} limit"


# --------------------------------------------------------------------------- decoding

# Bytes that never occur in text files (C0 controls except \t \n \v \f \r and ESC, plus DEL).
_CONTROL_BYTES = bytes(list(range(0, 9)) + list(range(14, 27)) + list(range(28, 32)) + [127])
_CONTROL_CHARS_RE = re.compile("[\x00-\x08\x0e-\x1a\x1c-\x1f\x7f]")
_BINARY_SAMPLE = 8192
_BINARY_SHARE = 0.05  # text files have essentially none; 5% is well clear of any real text


def decode_text(data: bytes) -> str:
    """Decode UTF-8 (BOM optional) or BOM-marked UTF-16; refuse binary data and other encodings.

    We deliberately do not guess legacy encodings: a wrong guess silently corrupts the text
    that answers quote, while an error tells the user exactly what to fix.
    """
    for bom, codec in ((codecs.BOM_UTF16_LE, "utf-16-le"), (codecs.BOM_UTF16_BE, "utf-16-be")):
        if data.startswith(bom):
            try:
                text = data[len(bom) :].decode(codec)
            except UnicodeDecodeError as exc:
                raise LoadError(f"not valid UTF-16 text (bad data at offset {exc.start + 2})")
            _refuse_binary_text(text)
            return text
    if data.startswith(codecs.BOM_UTF8):
        data = data[len(codecs.BOM_UTF8) :]
    # Binary before UTF-8: a PNG named .md is "binary", not "bad UTF-8", to the user.
    if b"\x00" in data:
        raise LoadError("binary content, not text")
    sample = data[:_BINARY_SAMPLE]
    controls = len(sample) - len(sample.translate(None, _CONTROL_BYTES))
    if controls > _BINARY_SHARE * len(sample):
        raise LoadError("binary content, not text")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        bad = data[exc.start]
        raise LoadError(
            f"not valid UTF-8 text (first bad byte 0x{bad:02x} at offset {exc.start})"
        ) from None


def _refuse_binary_text(text: str) -> None:
    sample = text[:_BINARY_SAMPLE]
    if "\x00" in text or len(_CONTROL_CHARS_RE.findall(sample)) > _BINARY_SHARE * len(sample):
        raise LoadError("binary content, not text")


def split_lines(text: str) -> list[str]:
    """Split on "\\n" only (editors' line numbers), dropping the "\\r" of CRLF endings.

    ``str.splitlines`` would also split on form feeds, U+2028 and friends and so shift line
    numbers away from what an editor shows.
    """
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the newline that ends the last line does not start a new one
    return [line[:-1] if line.endswith("\r") else line for line in lines]


# --------------------------------------------------------------------------- slugs


def github_slug(text: str) -> str:
    """GitHub's heading anchor: lowercase, drop punctuation except "-" and "_", spaces to "-"."""
    return re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")


def docutils_slug(text: str) -> str:
    """docutils' ``make_id``: ASCII-fold, lowercase, non-alphanumeric runs to "-"."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    slug = re.sub(r"[^a-z0-9]+", "-", ascii_text.lower())
    return re.sub(r"^[-0-9]+|-+$", "", slug)


def _unique(slug: str, seen: dict[str, int]) -> str:
    """GitHub and docutils both disambiguate repeated anchors with a numeric suffix."""
    count = seen.get(slug, 0)
    seen[slug] = count + 1
    return slug if count == 0 else f"{slug}-{count}"


# A section title is stored with every chunk of its section: a hostile 3 MB "heading" would
# be copied into thousands of payloads, and the inline-markup regexes below backtrack
# quadratically on such lines ("# *a *a *a …"). Titles are cut before cleaning and after.
MAX_TITLE_CHARS = 200
_MAX_RAW_TITLE_CHARS = 4 * MAX_TITLE_CHARS


def clip_title(text: str) -> str:
    return text if len(text) <= MAX_TITLE_CHARS else text[: MAX_TITLE_CHARS - 1].rstrip() + "…"


class _Outline:
    """The heading path at the current line: a stack of (level, title)."""

    def __init__(self) -> None:
        self._stack: list[tuple[int, str]] = []
        self.section: tuple[str, ...] = ()

    def enter(self, level: int, title: str) -> tuple[str, ...]:
        while self._stack and self._stack[-1][0] >= level:
            self._stack.pop()
        self._stack.append((level, clip_title(title)))
        self.section = tuple(t for _, t in self._stack)
        return self.section


# --------------------------------------------------------------------------- plain text

_Loaded = tuple[list[SourceLine], "str | None"]


def _load_plain(lines: list[str]) -> _Loaded:
    """Text, and code other than Python: lines as they are, no sections."""
    return [SourceLine(no=i, text=t) for i, t in enumerate(lines, 1)], None


# --------------------------------------------------------------------------- markdown

_ATX_RE = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_FENCE_RE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_SETEXT_RE = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_FRONT_MATTER_END = frozenset({"---", "..."})


def clean_inline_markdown(text: str) -> str:
    """Heading text as a reader sees it: no links, emphasis, code ticks or HTML tags."""
    text = text[:_MAX_RAW_TITLE_CHARS]
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)  # [text](url), ![alt](src)
    text = re.sub(r"!?\[([^\]]*)\]\[[^\]]*\]", r"\1", text)  # [text][ref]
    text = re.sub(r"<[^>]+>", "", text)  # inline HTML
    text = re.sub(r"(\*\*|__)(.+?)\1", r"\2", text)
    text = re.sub(r"(?<!\w)([*_])(.+?)\1(?!\w)", r"\2", text)
    text = re.sub(r"`+([^`]*)`+", r"\1", text)
    text = re.sub(r"\s+#+\s*$", "", text)
    return " ".join(text.split())


def _front_matter_end(lines: list[str]) -> int:
    """Index after YAML front matter ("---" first line … "---"/"..."), or 0 if there is none."""
    if not lines or lines[0].rstrip() != "---":
        return 0
    for i in range(1, len(lines)):
        if lines[i].rstrip() in _FRONT_MATTER_END:
            return i + 1
    return 0


def _may_be_setext_text(line: str) -> bool:
    """Lines that cannot be the text of a setext heading: blanks, indented code, lists, quotes
    and tables ("- a" + "---" would otherwise turn a list item into a heading)."""
    stripped = line.lstrip(" ")
    return (
        bool(stripped)
        and len(line) - len(stripped) < 4
        and not re.match(r"([-*+>|]|\d+[.)])(\s|$)", stripped)
    )


def _load_markdown(lines: list[str]) -> _Loaded:
    outline = _Outline()
    anchor: str | None = None
    seen: dict[str, int] = {}
    title: str | None = None
    # Mutable [section, anchor] per line so that a setext underline can relabel its title line.
    meta: list[tuple[tuple[str, ...], str | None]] = []
    fence: str | None = None  # the opening fence while inside a fenced code block
    start = _front_matter_end(lines)
    meta.extend([((), None)] * start)
    prev_is_paragraph = False  # previous line could be a setext heading's text

    def heading(level: int, raw: str) -> None:
        nonlocal anchor, title
        text = clean_inline_markdown(raw)
        if not text:
            return  # an empty "#" line names no section
        outline.enter(level, text)
        anchor = _unique(github_slug(text), seen) or None
        title = title or clip_title(text)

    for i in range(start, len(lines)):
        line = lines[i]
        if fence is not None:
            stripped = line.strip()
            if stripped.startswith(fence[0] * len(fence)) and not stripped.strip(fence[0]):
                fence = None
            meta.append((outline.section, anchor))
            prev_is_paragraph = False
            continue
        if m := _FENCE_RE.match(line):
            fence = m.group(1)
            meta.append((outline.section, anchor))
            prev_is_paragraph = False
            continue
        if m := _ATX_RE.match(line):
            heading(len(m.group(1)), m.group(2) or "")
            meta.append((outline.section, anchor))
            prev_is_paragraph = False
            continue
        if prev_is_paragraph and (m := _SETEXT_RE.match(line)):
            heading(1 if m.group(1)[0] == "=" else 2, lines[i - 1])
            meta[i - 1] = (outline.section, anchor)
            meta.append((outline.section, anchor))
            prev_is_paragraph = False
            continue
        meta.append((outline.section, anchor))
        prev_is_paragraph = _may_be_setext_text(line)

    out = [
        SourceLine(no=i, text=t, section=s, anchor=a)
        for i, (t, (s, a)) in enumerate(zip(lines, meta), 1)
    ]
    return out, title


# --------------------------------------------------------------------------- reST

_ADORNMENT_RE = re.compile(r"^([!-/:-@\[-`{-~])\1+[ \t]*$")


def clean_inline_rst(text: str) -> str:
    """Title text without roles, interpreted text, links and emphasis markers."""
    text = text[:_MAX_RAW_TITLE_CHARS]
    text = re.sub(r":[\w:+.-]+:`([^`]*)`", r"\1", text)  # :role:`text`
    text = re.sub(r"`([^`<]*?)\s*<[^>]*>`__?", r"\1", text)  # `text <url>`_
    text = re.sub(r"`+([^`]*)`+_{0,2}", r"\1", text)
    text = re.sub(r"(\*\*|\*)(.+?)\1", r"\2", text)
    text = re.sub(r"\s+<[^>]+>$", "", text)  # "Title <target>" in :role: texts
    return " ".join(text.split())


def _rst_titles(lines: list[str]) -> list[tuple[int, int, tuple[bool, str], str]]:
    """(first line index, last line index, style, title) for every section title, in order."""
    titles: list[tuple[int, int, tuple[bool, str], str]] = []
    n = len(lines)
    i = 0
    while i < n:
        line = lines[i]
        over = _ADORNMENT_RE.match(line)
        # Overline + title + underline (the title may be inset).
        if over and i + 2 < n and lines[i + 1].strip():
            under = _ADORNMENT_RE.match(lines[i + 2])
            text = lines[i + 1].strip()
            if (
                under
                and under.group(1) == over.group(1)
                and len(line.rstrip()) >= len(text)
                and not _ADORNMENT_RE.match(lines[i + 1])
            ):
                titles.append((i, i + 2, (True, over.group(1)), text))
                i += 3
                continue
        # Title + underline: the title starts a paragraph at column 0.
        if (
            i + 1 < n
            and line.strip()
            and not line[0].isspace()
            and not over
            and (i == 0 or not lines[i - 1].strip())
        ):
            under = _ADORNMENT_RE.match(lines[i + 1])
            if under and len(lines[i + 1].rstrip()) >= len(line.rstrip()):
                titles.append((i, i + 1, (False, under.group(1)), line.strip()))
                i += 2
                continue
        i += 1
    return titles


def _load_rst(lines: list[str]) -> _Loaded:
    titles = _rst_titles(lines)
    styles: list[tuple[bool, str]] = []  # heading level = order of first appearance
    outline = _Outline()
    seen: dict[str, int] = {}
    section: tuple[str, ...] = ()
    anchor: str | None = None
    doc_title: str | None = None
    out: list[SourceLine] = []
    t = 0
    for i, text in enumerate(lines):
        if t < len(titles) and titles[t][0] == i:
            _, _, style, raw = titles[t]
            if style not in styles:
                styles.append(style)
            title = clean_inline_rst(raw)
            section = outline.enter(styles.index(style) + 1, title)
            anchor = _unique(docutils_slug(title), seen) or None
            doc_title = doc_title or clip_title(title)
            t += 1
        out.append(SourceLine(no=i + 1, text=text, section=section, anchor=anchor))
    return out, doc_title


# --------------------------------------------------------------------------- code

_PY_DEF_RE = re.compile(r"^([ \t]*)(?:async[ \t]+)?(class|def)[ \t]+(\w+)")
_PY_PENDING_RE = re.compile(r"^[ \t]*(?:#|@|$)")  # comments, decorators, blank lines


def _load_python(lines: list[str]) -> _Loaded:
    """Sections from top-level classes/functions and the methods of top-level classes.

    Indentation decides where a block ends. Decorators and comments directly above a def
    belong to it; lines inside triple-quoted strings and lines that start with a closing
    bracket (the ")" of a multi-line signature) never end a block.
    """
    stack: list[tuple[int, str]] = []  # (indent, "class X" / "def y"), at most two deep
    sections: list[tuple[str, ...]] = []
    pending: list[int] = []  # indices of comment/decorator/blank lines not yet assigned
    in_string: str | None = None

    def current() -> tuple[str, ...]:
        return tuple(label for _, label in stack)

    for i, line in enumerate(lines):
        if in_string is not None:
            sections.append(current())
            if line.count(in_string) % 2 == 1:
                in_string = None
            continue
        if _PY_PENDING_RE.match(line):
            sections.append(current())
            pending.append(i)
            continue
        stripped = line.lstrip(" \t")
        indent = len(line) - len(stripped)
        if not stripped.startswith((")", "]", "}")):
            while stack and indent <= stack[-1][0]:
                stack.pop()
        parent = current()
        m = _PY_DEF_RE.match(line)
        if m and (not stack or (len(stack) == 1 and stack[0][1].startswith("class "))):
            stack.append((indent, clip_title(f"{m.group(2)} {m.group(3)}")))
        # Pending lines: those right above a def (no blank line between) go with the def,
        # the rest with the enclosing block.
        here = current()
        attach = True
        for j in reversed(pending):
            attach = attach and bool(lines[j].strip())
            sections[j] = here if attach else parent
        pending.clear()
        sections.append(here)
        for quote in ('"""', "'''"):
            if line.count(quote) % 2 == 1:
                in_string = quote
                break
    out = [SourceLine(no=i + 1, text=t, section=s) for i, (t, s) in enumerate(zip(lines, sections))]
    return out, None


_LINE_LOADERS: dict[str, Callable[[list[str]], _Loaded]] = {
    "text": _load_plain,
    "markdown": _load_markdown,
    "rst": _load_rst,
    "code": _load_plain,  # Python has its own loader, picked by suffix in load_bytes
}
