"""Forge permalinks (citations/forge.py): each forge's line-anchor form at a commit, from every shape
of remote URL; no link where the forge or the lines cannot be trusted."""

from __future__ import annotations

import pytest

from ragcore.citations.forge import answer_source, permalink, web_base, with_permalinks
from ragcore.types import Citation

SHA = "9c1d3b7e0f2a44b1c6d2e8f90a1b2c3d4e5f6a7b"


@pytest.mark.parametrize("remote,base", [
    ("https://github.com/acme/docs.git", ("github", "https://github.com/acme/docs")),
    ("git@github.com:acme/docs.git", ("github", "https://github.com/acme/docs")),
    ("ssh://git@gitlab.com/group/sub/docs.git", ("gitlab", "https://gitlab.com/group/sub/docs")),
    ("https://user:token@gitlab.example.org/g/docs", ("gitlab", "https://gitlab.example.org/g/docs")),
    ("https://codeberg.org/acme/docs.git", ("gitea", "https://codeberg.org/acme/docs")),
    ("git@bitbucket.org:acme/docs.git", ("bitbucket", "https://bitbucket.org/acme/docs")),
    ("https://git.example.org/acme/docs.git", None),
    (None, None),
])
def test_web_base(remote, base) -> None:
    assert web_base(remote) == base


def test_each_forge_anchors_the_lines_at_the_commit() -> None:
    assert permalink("git@github.com:a/b.git", SHA, "docs/x y.md", 10, 20) == \
        f"https://github.com/a/b/blob/{SHA}/docs/x%20y.md#L10-L20"
    assert permalink("https://github.com/a/b", SHA, "x.md", 7, 7) == f"https://github.com/a/b/blob/{SHA}/x.md#L7"
    assert permalink("https://gitlab.com/a/b.git", SHA, "x.md", 10, 20) == f"https://gitlab.com/a/b/-/blob/{SHA}/x.md#L10-20"
    assert permalink("https://gitea.io/a/b.git", SHA, "x.md", 10, 20) == f"https://gitea.io/a/b/src/commit/{SHA}/x.md#L10-L20"
    assert permalink("https://bitbucket.org/a/b.git", SHA, "x.md", 10, 20) == f"https://bitbucket.org/a/b/src/{SHA}/x.md#lines-10:20"
    assert permalink("https://bitbucket.org/a/b.git", SHA, "x.pdf") == f"https://bitbucket.org/a/b/src/{SHA}/x.pdf"
    assert permalink("https://github.com/a/b", None, "x.md", 1, 2) is None


def _cit(path: str, origin: str = "corpus", page: int | None = None) -> Citation:
    return Citation(n=1, chunk_id="c", path=path, start_line=3, end_line=5, section=(), page=page, anchor=None,
                    url="?path=x", retrieval_score=None, score_kind="fused", support=1.0, origin=origin)  # type: ignore[arg-type]


def test_citations_get_links_only_from_a_clean_commit_on_a_known_forge() -> None:
    src = {"mode": "path", "commit": SHA, "dirty": False, "remote": "https://github.com/a/b", "subdir": "docs"}
    (c,) = with_permalinks([_cit("x.md")], src)
    assert c.permalink == f"https://github.com/a/b/blob/{SHA}/docs/x.md#L3-L5"  # a folder's paths sit below its subdir
    assert with_permalinks([_cit("x.md")], {**src, "dirty": True})[0].permalink is None
    assert with_permalinks([_cit("x.md", origin="selection")], src)[0].permalink is None
    assert with_permalinks([_cit("m.pdf", page=2)], src)[0].permalink == f"https://github.com/a/b/blob/{SHA}/docs/m.pdf"
    assert with_permalinks([_cit("x.md")], {}) [0].permalink is None


def test_answer_source_names_the_repository_by_folder_only() -> None:
    assert answer_source(None) == {"mode": "path", "ref": None, "commit": None, "dirty": None, "repository": None, "remote": None}
    got = answer_source({"mode": "ref", "ref": "main", "commit": SHA, "dirty": False, "repository": "/srv/x/harbour"})
    assert got["repository"] == "harbour" and got["mode"] == "ref"
