"""Discovery: what ``discover`` takes, what it refuses and why, and that it never leaves the
folders being ingested, never opens special files and walks any depth. No model needed."""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path

import pytest

from ragcore.ingest.read.loaders import LoadError, read_bytes
from ragcore.ingest.discover import discover
from bench.support.hostile_corpus import deep_folders
from tests.conftest import write_corpus

ROOT_USER = os.name == "posix" and os.geteuid() == 0


def _found(root: Path) -> tuple[dict[str, Path | None], dict[str, str]]:
    _, sources = discover([root])
    taken = {s.rel: s.path for s in sources if s.problem is None}
    refused = {s.rel: s.problem for s in sources if s.problem is not None}
    return taken, refused


def test_symlinks_out_of_the_corpus_are_refused_with_the_reason(tmp_path: Path) -> None:
    outside = write_corpus(tmp_path / "outside", {"secret.md": "# Secret\n\nOUTSIDE\n"})
    root = write_corpus(tmp_path / "c", {"a.md": "# A\n\ntext\n", ".hidden/h.md": "hidden\n"})
    (root / "passwd.txt").symlink_to("/etc/passwd")
    (root / "up.md").symlink_to("../outside/secret.md")
    (root / "zero.txt").symlink_to("/dev/zero")
    (root / "etc").symlink_to("/etc")
    (root / "inside.md").symlink_to("a.md")
    (root / "to_hidden.md").symlink_to(".hidden/h.md")
    taken, refused = _found(root)
    assert taken == {"a.md": root / "a.md", "inside.md": root / "a.md"}  # an inside link is read at its target
    for rel in ("passwd.txt", "up.md", "zero.txt"):
        assert "outside the corpus" in refused[rel] and "not followed" in refused[rel]
    assert "/etc/passwd" in refused["passwd.txt"] and str(outside / "secret.md") in refused["up.md"]
    assert "folder outside the corpus" in refused["etc"]
    assert "hidden" in refused["to_hidden.md"]


def test_dangling_links_loops_and_folder_loops(tmp_path: Path) -> None:
    root = write_corpus(tmp_path / "c", {"sub/a.md": "text\n"})
    (root / "dangling.md").symlink_to("nowhere.md")
    (root / "loop1.md").symlink_to("loop2.md")
    (root / "loop2.md").symlink_to("loop1.md")
    (root / "sub" / "up").symlink_to("..")  # a folder loop: must not be walked
    (root / "self").symlink_to("self")
    t0 = time.monotonic()
    taken, refused = _found(root)
    assert time.monotonic() - t0 < 5
    assert set(taken) == {"sub/a.md"}
    assert "broken symlink" in refused["dangling.md"]
    assert refused["loop1.md"].startswith("symlink loop") and refused["loop2.md"].startswith("symlink loop")
    assert refused["self"].startswith("symlink loop")


def test_special_files_are_refused_without_being_opened(tmp_path: Path) -> None:
    root = write_corpus(tmp_path / "c", {"a.md": "text\n"})
    os.mkfifo(root / "pipe.md")
    (root / "inner.md").symlink_to("pipe.md")
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(root / "sock.md"))
        t0 = time.monotonic()
        taken, refused = _found(root)
    assert time.monotonic() - t0 < 5
    assert set(taken) == {"a.md"}
    assert refused["pipe.md"] == "not a regular file (a FIFO)"
    assert refused["sock.md"] == "not a regular file (a socket)"
    assert "not a regular file" in refused["inner.md"]


def test_read_bytes_refuses_special_files_on_the_open_descriptor(tmp_path: Path) -> None:
    """The second line of defence: a path that turned into a FIFO after discovery."""
    os.mkfifo(tmp_path / "p.md")
    t0 = time.monotonic()
    with pytest.raises(LoadError, match="a FIFO"):
        read_bytes(tmp_path / "p.md", max_bytes=100)
    with pytest.raises(LoadError, match="character device"):
        read_bytes(Path("/dev/zero"), max_bytes=100)
    assert time.monotonic() - t0 < 5
    (tmp_path / "l.md").symlink_to("/etc/hostname")
    with pytest.raises(LoadError, match="symlink"):
        read_bytes(tmp_path / "l.md", max_bytes=100, follow_symlinks=False)


def test_size_limit_is_enforced_while_reading(tmp_path: Path) -> None:
    # /proc files report size 0 and still have content: only a bounded read catches them
    big = Path("/proc/self/maps")
    data = read_bytes(big, max_bytes=10**7)
    assert data and os.stat(big).st_size == 0
    with pytest.raises(LoadError, match="limit"):
        read_bytes(big, max_bytes=10)


def test_deep_folders_do_not_abort_the_walk(tmp_path: Path) -> None:
    root = write_corpus(tmp_path / "c", {"top.md": "top text\n"})
    with deep_folders(root, 1100, {"bottom.md": "deep text\n"}) as bottom:
        taken, refused = _found(root)
    assert refused == {}
    assert set(taken) == {"top.md", bottom + "bottom.md"}


def test_hidden_vcs_and_unsupported_entries_are_skipped_silently(tmp_path: Path) -> None:
    root = write_corpus(tmp_path / "c", {
        "a.md": "x\n", ".hidden.md": "x\n", ".git/config.md": "x\n", "node_modules/p/readme.md": "x\n",
        "image.png": b"\x89PNG", "x.md/inner.md": "a folder named like a file\n",
    })  # fmt: skip
    taken, refused = _found(root)
    assert set(taken) == {"a.md", "x.md/inner.md"} and refused == {}


def test_unprintable_names_are_refused_by_name(tmp_path: Path) -> None:
    root = write_corpus(tmp_path / "c", {"a.md": "x\n", "esc\x1b[31mred.md": "x\n", "new\nline.md": "x\n"})
    with open(os.path.join(os.fsencode(root), b"bad\xff.md"), "wb") as f:
        f.write(b"x\n")
    taken, refused = _found(root)
    assert set(taken) == {"a.md"}
    assert refused == {
        "esc\\x1b[31mred.md": "file name contains control characters (rename it)",
        "new\\x0aline.md": "file name contains control characters (rename it)",
        "bad\\xff.md": "file name is not valid UTF-8 (rename it)",
    }


@pytest.mark.skipif(ROOT_USER, reason="root reads any folder: permissions cannot make one unreadable")
def test_unreadable_folder_is_reported_and_the_rest_taken(tmp_path: Path) -> None:
    root = write_corpus(tmp_path / "c", {"a.md": "x\n", "locked/b.md": "x\n"})
    (root / "locked").chmod(0)
    try:
        taken, refused = _found(root)
    finally:
        (root / "locked").chmod(0o700)
    assert set(taken) == {"a.md"}
    assert refused == {"locked": "folder could not be read: permission denied"}


SPHINX_BUILD = {
    "index.html": "<h1>Docs</h1><p>Welcome.</p>",
    "quickstart.html": "<h1>Quickstart</h1><p>Run the app.</p>",
    "patterns/forms.html": "<h1>Forms</h1><p>Read the form.</p>",
    "_sources/index.rst.txt": "Docs\n====\n\nWelcome.\n",
    "_sources/patterns/forms.rst.txt": "Forms\n=====\n\nRead the form.\n",
    "_static/doctools.js": "var Documentation = {};\n",
    "searchindex.js": "Search.setIndex({docnames:[]})\n",
    "search.html": "<h1>Search</h1>",
    "genindex.html": "<h1>Index</h1><p>F</p>",
    "genindex-A.html": "<h1>Index – A</h1>",
    "py-modindex.html": "<h1>Python Module Index</h1>",
    "objects.inv": "# Sphinx inventory\n",
}


def test_a_sphinx_builds_generated_files_are_skipped_and_its_pages_kept(tmp_path: Path) -> None:
    """_sources/ copies every page's source (each page found twice, cited by its source),
    _static/ holds the theme's scripts, and the indexes and search page only list links."""
    taken, refused = _found(write_corpus(tmp_path / "html", SPHINX_BUILD))
    assert sorted(taken) == ["index.html", "patterns/forms.html", "quickstart.html"] and not refused, (taken, refused)


def test_the_same_names_outside_a_sphinx_build_are_ingested(tmp_path: Path) -> None:
    """Without searchindex.js or objects.inv the folder is not a Sphinx build: a project's own
    search.html or _static/app.js are its documents; and a _sources folder given as the root is
    read as it is."""
    files = {k: v for k, v in SPHINX_BUILD.items() if k not in ("searchindex.js", "objects.inv")}
    taken, _ = _found(write_corpus(tmp_path / "site", files))
    assert {"search.html", "genindex.html", "_static/doctools.js", "_sources/index.rst.txt"} <= set(taken), sorted(taken)
    build = write_corpus(tmp_path / "html", SPHINX_BUILD)
    taken, _ = _found(build / "_sources")
    assert sorted(taken) == ["index.rst.txt", "patterns/forms.rst.txt"], sorted(taken)
