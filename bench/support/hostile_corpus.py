"""A hostile corpus, built at run time: 35+ kinds of bad or odd input next to good files.

Shared by the test that ingests it at small sizes (tests/integration/test_hostile_corpus.py) and the
benchmark that ingests it at full size and measures peak memory (bench/scripts/hostile_ingest.py). It
lives here, below both, because bench must not import tests (pyproject's import-linter contracts).
"""

from __future__ import annotations

import contextlib
import os
import stat
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

ROOT_USER = os.name == "posix" and os.geteuid() == 0
PASSWD_MARK = "root:x:0:0"
OUTSIDE_MARK = "OUTSIDE-SECRET-7731"


@dataclass(frozen=True)
class Sizes:
    """The test's sizes; the benchmark passes full ones (the issue's 20 MB line, 1M lines)."""

    max_file_bytes: int = 4_000_000
    max_file_chunks: int = 200
    chunk_size: int = 180
    huge_line_bytes: int = 3_000_000  # one minified-JSON-like line: too many chunks
    short_lines: int = 50_000  # one-character lines: refused before they are built
    nested_html: int = 30_000  # nested <div>s around one sentence
    table_columns: int = 10_000
    zip_bomb_bytes: int = 50_000_000  # what the gzip named .md would inflate to (it is not inflated)
    folder_depth: int = 1100


@dataclass
class Corpus:
    root: Path
    bad: dict[str, str] = field(default_factory=dict)  # rel → part of the expected reason
    good: dict[str, str] = field(default_factory=dict)  # rel → a question it answers
    ignored: set[str] = field(default_factory=set)  # rels that must not appear at all

    def write(self, rel: str | bytes, content: str | bytes) -> Path:
        path = Path(os.fsdecode(os.path.join(os.fsencode(self.root), os.fsencode(rel))))
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content.encode() if isinstance(content, str) else content)
        return path


def _links(c: Corpus, outside: Path) -> None:
    (outside / "secret.md").write_text(f"# Secret\n\n{OUTSIDE_MARK} the vault code.\n")
    for rel, target in {"passwd.txt": "/etc/passwd", "up.md": "../outside/secret.md", "zero.txt": "/dev/zero",
                        "abs_out.md": str(outside / "secret.md")}.items():  # fmt: skip
        (c.root / rel).symlink_to(target)
        c.bad[rel] = "outside the corpus"
    (c.root / "etc").symlink_to("/etc")
    c.bad["etc"] = "folder outside the corpus"
    (c.root / "dangling.md").symlink_to("nowhere.md")
    c.bad["dangling.md"] = "broken symlink"
    (c.root / "loop1.md").symlink_to("loop2.md")
    (c.root / "loop2.md").symlink_to("loop1.md")
    c.bad["loop1.md"] = c.bad["loop2.md"] = "symlink loop"
    (c.root / "dirloop").symlink_to(".")  # a folder link inside: not followed, so no loop
    c.ignored.add("dirloop/good.md")
    (c.root / "inside.md").symlink_to("good.md")
    c.good["inside.md"] = "When do the zebras cross the Mara river?"
    c.write(".hidden/h.md", f"{OUTSIDE_MARK} hidden\n")
    (c.root / "to_hidden.md").symlink_to(".hidden/h.md")
    c.bad["to_hidden.md"] = "hidden or skipped"


def _special(c: Corpus) -> None:
    os.mkfifo(c.root / "fifo.md")
    c.bad["fifo.md"] = "not a regular file (a FIFO)"
    (c.root / "to_fifo.md").symlink_to("fifo.md")
    c.bad["to_fifo.md"] = "not a regular file (a FIFO)"
    if ROOT_USER:  # only root may create device nodes; /dev/null's numbers are 1, 3
        os.mknod(c.root / "dev.md", 0o600 | stat.S_IFCHR, os.makedev(1, 3))
        c.bad["dev.md"] = "character device"
    (c.root / "folder.md").mkdir()  # a folder named like a file: walked as a folder
    c.write("folder.md/inner.md", "# Inner\n\nThe glassblower anneals every vase overnight.\n")
    c.good["folder.md/inner.md"] = "How long does the glassblower anneal a vase?"


def _encodings(c: Corpus) -> None:
    bad = {
        "binary.md": (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(300), "binary"),
        "nul.txt": (b"some text\x00with a NUL byte\n", "binary"),
        "controls.txt": (bytes(range(1, 9)) * 200, "binary"),
        "corrupt.pdf": (b"%PDF-1.4\n1 0 obj << /Type /Catalog >> garbage", "could not read PDF"),
        "random.pdf": (os.urandom(2048).replace(b"\x00", b"\x01"), "could not read PDF"),
        "empty.md": (b"", "empty file"),
        "blank.txt": (b"  \n\t\n   \r\n", "only whitespace"),
        "newlines.md": (b"\n" * 10_000, "only whitespace"),
        "utf16_nobom.txt": ("The text has no byte order mark.\n".encode("utf-16-le"), "binary"),
        "utf16_odd.txt": (b"\xff\xfeA\x00B", "not valid UTF-16"),
        "latin1.txt": ("caf\xe9 cr\xe8me br\xfbl\xe9e\n".encode("latin-1"), "not valid UTF-8"),
        "invalid_utf8.md": (b"# Title\n\nok then \xc3\x28 broken\n", "not valid UTF-8"),
        "script_only.html": (b"<html><head><style>p{}</style></head><body><script>alert(1)</script></body></html>",
                             "no visible text"),
    }  # fmt: skip
    for rel, (data, reason) in bad.items():
        c.write(rel, data)
        c.bad[rel] = reason
    c.write("utf16_bom.txt", "The glacier retreated eleven metres last summer.\n".encode("utf-16"))
    c.good["utf16_bom.txt"] = "How far did the glacier retreat?"
    c.write("crlf.md", "# Kiln\r\n\r\nThe pottery kiln reaches 1280 degrees during glaze firing.\r\n")
    c.good["crlf.md"] = "How hot does the pottery kiln get?"
    c.write("cr_only.txt", "Saffron\rThe saffron crocus flowers only in autumn.\rEnd\r")
    c.good["cr_only.txt"] = "When does the saffron crocus flower?"


def _minified_json(n: int) -> str:
    """``n`` characters of one-line JSON with no spaces, every record distinct (repeated text
    would make identical chunks, which share one id)."""
    parts, size, i = [], 0, 0
    while size < n:
        part = f'{{"id":{i},"name":"item-{i:07d}","tags":["a{i % 97}","b{i % 89}"],"v":{i * 0.37:.2f}}},'
        parts.append(part)
        size += len(part)
        i += 1
    return "[" + "".join(parts)[: n - 1]


def _sizes(c: Corpus, s: Sizes) -> None:
    line = _minified_json(s.huge_line_bytes)
    c.write("huge_line.json", line)
    c.bad["huge_line.json"] = "RAGCORE_MAX_FILE_CHUNKS"
    c.write("short_lines.txt", "a\n" * s.short_lines)
    c.bad["short_lines.txt"] = "RAGCORE_MAX_FILE_CHUNKS"
    c.write("over_limit.txt", "word " * (s.max_file_bytes // 5 + 1))
    c.bad["over_limit.txt"] = "limit"
    bomb = zlib.compressobj(9, zlib.DEFLATED, 31)  # gzip framing
    step = bytes(1 << 20)
    parts = [bomb.compress(step) for _ in range(s.zip_bomb_bytes >> 20)] + [bomb.flush()]
    c.write("bomb.md", b"".join(parts))
    c.bad["bomb.md"] = "binary"
    c.write("nested.html", "<div>" * s.nested_html + "<p>The beekeeper counts nine hives each morning.</p>")
    c.good["nested.html"] = "How many hives does the beekeeper count?"
    table = "|" + "|".join(str(i % 10) for i in range(s.table_columns)) + "|\n"
    table += "|" + "-|" * s.table_columns + "\n" + table
    c.write("table.md", f"# Tides\n\nThe tide table lists the spring tides of the harbour.\n\n{table}")
    c.good["table.md"] = "Which tides does the tide table list?"


def _names(c: Corpus) -> None:
    for raw, shown in (("esc\x1b[31mred.md", "esc\\x1b[31mred.md"), ("new\nline.md", "new\\x0aline.md")):
        c.write(raw, "# Name\n\nA file with a hostile name.\n")
        c.bad[shown] = "control characters"
    c.write(b"bad\xff.md", "# Name\n\nA file whose name is not UTF-8.\n")
    c.bad["bad\\xff.md"] = "not valid UTF-8"
    long_name = "L" * 240 + ".md"
    c.write(long_name, "# Long\n\nThe cartographer inks coastlines with a crow quill.\n")
    c.good[long_name] = "What does the cartographer ink coastlines with?"
    for rel in (".hidden.md", ".git/config.md", "node_modules/pkg/readme.md", "image.png", "notes.xyz"):
        c.write(rel, f"{OUTSIDE_MARK}\n")
        c.ignored.add(rel)
    c.write("vanishing.md", "# Gone\n\nThis file is deleted before it is read.\n")
    c.bad["vanishing.md"] = "file not found"


def _good(c: Corpus) -> None:
    from bench.support.pdfs import make_pdf  # reportlab loads only when the corpus is built

    c.write("good.md", "# Zebra migration\n\nThe zebras cross the Mara river every August.\n")
    c.good["good.md"] = "When do the zebras cross the Mara river?"
    c.write("notes.txt", "The lighthouse keeper polishes the brass lens every evening.\n")
    c.good["notes.txt"] = "Who polishes the brass lens?"
    c.write("page.html", '<html><head><base href="file:///etc/"></head><body><iframe src="/etc/passwd"></iframe>'
                         '<p>The orchard grows forty varieties of heirloom apples.</p></body></html>')  # fmt: skip
    c.good["page.html"] = "How many apple varieties does the orchard grow?"
    make_pdf(c.root / "paper.pdf", [["The observatory dome rotates on steel rails."]])
    c.good["paper.pdf"] = "What does the observatory dome rotate on?"
    make_pdf(c.root / "blank.pdf", [[]])
    c.bad["blank.pdf"] = "no extractable text"
    good_pdf = make_pdf(c.root / "whole.pdf", [["Some text on a page."]])
    (c.root / "whole.pdf").unlink()
    c.write("truncated.pdf", good_pdf[: len(good_pdf) // 2])
    c.bad["truncated.pdf"] = "could not read PDF"


def build_hostile_corpus(base: Path, sizes: Sizes = Sizes()) -> Corpus:
    """The corpus under ``base/c`` (``base/outside`` holds what links point out to). The deep
    folder chain is made by the caller with ``deep_folders`` (it must also be removed)."""
    outside = base / "outside"
    outside.mkdir(parents=True)
    c = Corpus(root=base / "c")
    c.root.mkdir()
    _good(c)
    _links(c, outside)
    _special(c)
    _encodings(c)
    _sizes(c, sizes)
    _names(c)
    return c


@contextlib.contextmanager
def deep_folders(root: Path, depth: int, files: dict[str, str]) -> Iterator[str]:
    """``depth`` nested folders "d" under ``root`` with ``files`` at the bottom; yields the
    bottom's relative path and removes the chain afterwards. Built and removed one level at a
    time relative to open folders: Path.mkdir(parents=True) and shutil.rmtree recurse, and a
    leftover chain would crash pytest's own clean-up of old temp folders later."""
    root.mkdir(parents=True, exist_ok=True)
    fds = [os.open(root, os.O_RDONLY)]
    try:
        for _ in range(depth):
            os.mkdir("d", dir_fd=fds[-1])
            fds.append(os.open("d", os.O_RDONLY, dir_fd=fds[-1]))
        for name, text in files.items():
            out = os.open(name, os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fds[-1])
            os.write(out, text.encode())
            os.close(out)
        yield "d/" * depth
    finally:
        for name in os.listdir(fds[-1]):
            os.unlink(name, dir_fd=fds[-1])
        while len(fds) > 1:
            os.close(fds.pop())
            os.rmdir("d", dir_fd=fds[-1])
        os.close(fds[0])
