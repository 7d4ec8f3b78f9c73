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
from pathlib import Path
from typing import Callable

from ragcore.types import DocKind, LoadedDocument, SourceLine
from ragcore.ingest.read.outline import (  # noqa: F401  (github_slug, docutils_slug, MAX_TITLE_CHARS are public here)
    MAX_TITLE_CHARS, _Loaded, _load_markdown, _load_plain, _load_python, _load_rst, docutils_slug, github_slug,
)


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
        from ragcore.ingest.read.pdf import PdfError, extract_pdf  # lazy: PDFium (pypdfium2) is only needed for PDFs

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
    """Why a file or folder could not be read, in the words the ingest report shows."""
    if exc.errno == errno.ELOOP:
        return "is a symlink (not followed)"
    if isinstance(exc, PermissionError):
        return "permission denied"
    if isinstance(exc, IsADirectoryError):
        return "is a directory"
    if isinstance(exc, FileNotFoundError):
        return "file not found"
    return f"could not read file: {exc.strerror or exc}"


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


_LINE_LOADERS: dict[str, Callable[[list[str]], _Loaded]] = {
    "text": _load_plain,
    "markdown": _load_markdown,
    "rst": _load_rst,
    "code": _load_plain,  # Python has its own loader, picked by suffix in load_bytes
}
