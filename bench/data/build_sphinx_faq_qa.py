"""Build a retrieval QA evaluation set from a Sphinx documentation package with a FAQ page.

Two sets, each from one Debian package, with unanswerable questions drawn from the other's FAQ:

- ``scrapy``: Scrapy's documentation (``python-scrapy-doc``); questions from ``faq.html``;
  unanswerable: SQLAlchemy FAQ entries about the ORM session, mapping, SQL expressions and schema
  metadata (``faq/{sessions,ormconfiguration,sqlexpressions,metadata_schema}.html``), which a web
  crawling framework's docs do not cover. Its connections, performance, installation and
  third-party pages are left out: "How do I configure logging?" is a question Scrapy's docs answer.
- ``sqlalchemy``: SQLAlchemy 1.4's documentation (``python-sqlalchemy-doc``); questions from every
  page under ``faq/``; unanswerable: every Scrapy FAQ entry (crawling, spiders, selectors, feeds),
  which a database toolkit's docs do not cover. Its changelog and migration notes (``changelog/``,
  7.7 MB, a third of the HTML, and no FAQ answer links there) are left out, so that the set
  ingests in minutes on two cores.

As for the Django and Git sets (``build_git_qa.py``), nothing is written by hand but these rules:

- corpus: every ``.html`` page of the package's HTML tree, byte-identical, except the FAQ pages
  (the questions come from there), generated index/search/table-of-contents pages and Sphinx
  build folders (``_static``, ``_sources``, ``_modules``, ``_images``, ``_downloads``);
- questions: every FAQ entry (a section headed ``h2``–``h4``) whose own text (not its subsections)
  links to a page of the corpus; the page's title section is not an entry;
- relevance: the targets of those links (``page.html`` or ``page.html#anchor``).

Usage::

    python bench/data/build_sphinx_faq_qa.py {scrapy,sqlalchemy} OUT_DIR [--deb FILE] [--other-deb FILE]

Without ``--deb``/``--other-deb`` the packages are fetched with ``apt-get download`` into a
temporary folder. The set is written to OUT_DIR with a README recording package versions,
sha256 sums and licences.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from bs4 import BeautifulSoup, Tag

sys.path.insert(0, str(Path(__file__).resolve().parent))
from build_git_qa import FILES_SECTION, Package, _question, _ws, fetch_package, resolve  # noqa: E402  (same folder, a script)

BUILD_DIRS = ("_static", "_sources", "_modules", "_images", "_downloads")
GENERATED = ("genindex.html", "search.html", "py-modindex.html", "contents.html", "404.html")


@dataclass(frozen=True)
class Project:
    name: str
    package: str
    root: str  # doc root inside the package
    faq: tuple[str, ...]  # FAQ pages: the questions (glob patterns relative to root)
    prefix: str  # question id prefix
    licence: str
    skip_dirs: tuple[str, ...] = ()  # top-level folders left out of the corpus (see the docstring)


PROJECTS = {
    "scrapy": Project("Scrapy 2.8", "python-scrapy-doc", "usr/share/doc/python-scrapy-doc/html", ("faq.html",),
                      "scrapy-faq", "BSD-3-Clause (`Files: *` stanza of the package's copyright file: Scrapy "
                      "developers)"),
    "sqlalchemy": Project("SQLAlchemy 1.4", "python-sqlalchemy-doc", "usr/share/doc/python-sqlalchemy-doc/html",
                          ("faq/*.html",), "sqla-faq", "MIT (Expat; `Files: *` stanza of the package's copyright file: "
                          "the SQLAlchemy authors and contributors)", skip_dirs=("changelog",)),
}
# which other project's FAQ pages give the unanswerable questions (see the module docstring)
UNANSWERABLE_FROM = {
    "scrapy": ("sqlalchemy", ("faq/sessions.html", "faq/ormconfiguration.html", "faq/sqlexpressions.html",
                              "faq/metadata_schema.html")),
    "sqlalchemy": ("scrapy", ("faq.html",)),
}


def faq_pages(root: Path, project: Project) -> list[str]:
    return sorted({p.relative_to(root).as_posix() for pat in project.faq for p in root.glob(pat)})


def corpus_pages(root: Path, project: Project) -> list[str]:
    faq = set(faq_pages(root, project))
    out = []
    for p in sorted(root.rglob("*.html")):
        rel = p.relative_to(root).as_posix()
        if rel in faq or rel.split("/")[0] in BUILD_DIRS + project.skip_dirs or rel in GENERATED:
            continue
        out.append(rel)
    return out


def _heading(sec: Tag) -> Tag | None:
    return sec.find(["h1", "h2", "h3", "h4"], recursive=False)


def faq_entries(html: str) -> list[tuple[str, str, str, list[str]]]:
    """(anchor, question, own answer text, own hrefs) for every FAQ section below the page title."""
    soup = BeautifulSoup(html, "html.parser")
    out = []
    for sec in soup.select("section[id], div.section[id]"):
        h = _heading(sec)
        if h is None or h.name == "h1":
            continue
        for link in h.select("a.headerlink"):
            link.decompose()
        own = [e for e in sec.find_all(recursive=False)
               if e is not h and not (isinstance(e, Tag) and (e.name == "section" or "section" in (e.get("class") or [])))]
        text = _ws(" ".join(e.get_text(" ") for e in own))
        hrefs = [a["href"] for e in own if isinstance(e, Tag) for a in e.find_all("a", href=True)]
        out.append((sec["id"], _ws(h.get_text(" ")), text, hrefs))
    return out


def questions_of(root: Path, project: Project, corpus: set[str]) -> tuple[list[dict], int]:
    rows, n = [], 0
    for page in faq_pages(root, project):
        for anchor, q, ans, hrefs in faq_entries((root / page).read_text(encoding="utf-8")):
            n += 1
            rel = list(dict.fromkeys(t for h in hrefs if (t := resolve(h, page, corpus))))
            if rel:
                rows.append(_question(f"{project.prefix}-{n:04d}", q, ans, rel, f"{page}#{anchor}"))
    return rows, n


def unanswerable_of(root: Path, other: Project, pages: tuple[str, ...]) -> list[dict]:
    out, n = [], 0
    for page in pages:
        for anchor, q, ans, _ in faq_entries((root / page).read_text(encoding="utf-8")):
            n += 1
            out.append({"id": f"{other.prefix}-u{n:04d}", "question": q, "answer": ans, "relevant": [],
                        "relevant_docs": [], "source": f"{page}#{anchor}", "answerable": False})
    return out


def build(name: str, out: Path, pkg: Package, other_pkg: Package) -> dict:
    project = PROJECTS[name]
    other_name, other_pages = UNANSWERABLE_FROM[name]
    other = PROJECTS[other_name]
    root = pkg.root / project.root
    pages = corpus_pages(root, project)
    corpus = set(pages)
    if out.exists():
        shutil.rmtree(out)
    for p in pages:
        (out / "corpus" / p).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(root / p, out / "corpus" / p)
    questions, entries = questions_of(root, project, corpus)
    unanswerable = unanswerable_of(other_pkg.root / other.root, other, other_pages)
    for fname, rows in (("questions.jsonl", questions), ("unanswerable.jsonl", unanswerable)):
        with open(out / fname, "w", encoding="utf-8") as f:
            for r in sorted(rows, key=lambda r: r["id"]):
                f.write(json.dumps(r, ensure_ascii=False) + "\n")
    stats = {"pages": len(pages), "bytes": sum((root / p).stat().st_size for p in pages), "entries": entries,
             "questions": len(questions), "links": sum(len(q["relevant"]) for q in questions),
             "unanswerable": len(unanswerable)}
    (out / "README.md").write_text(readme(project, other, other_pages, pkg, other_pkg, stats), encoding="utf-8")
    return stats


def readme(p: Project, other: Project, other_pages: tuple[str, ...], pkg: Package, opkg: Package, s: dict) -> str:
    return f"""# {p.name} documentation: retrieval QA evaluation set

Built by `bench/data/build_sphinx_faq_qa.py {p.name.split()[0].lower()}` from Debian packages; the questions,
answers and relevance links come from the documentation's authors (see the builder's docstring for
the selection rules).

## Source

- Corpus, questions: Debian package `{pkg.name}` version `{pkg.version}`, file `{pkg.deb.name}`,
  sha256 `{pkg.sha256}`; FAQ pages {", ".join(p.faq)}.
- Unanswerable questions: {other.name} FAQ entries ({", ".join(other_pages)}) from Debian package
  `{opkg.name}` version `{opkg.version}`, file `{opkg.deb.name}`, sha256 `{opkg.sha256}`.

## Licence

{p.name}'s documentation: {p.licence}. The unanswerable questions' text: {other.licence}.

## Counts

| what | count |
| --- | --- |
| corpus pages (`corpus/**/*.html`; FAQ, index/search/contents pages, build folders{"".join(f", {d}/" for d in p.skip_dirs)} left out) | {s['pages']} |
| corpus size (bytes) | {s['bytes']} |
| FAQ entries found | {s['entries']} |
| questions (entries whose own text links into the corpus) | {s['questions']} |
| relevance links | {s['links']} |
| unanswerable | {s['unanswerable']} |

{FILES_SECTION}"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("project", choices=sorted(PROJECTS))
    ap.add_argument("out", type=Path)
    ap.add_argument("--deb", type=Path, help="the project's documentation package (.deb)")
    ap.add_argument("--other-deb", type=Path, help="the package of the project whose FAQ gives the unanswerable questions")
    a = ap.parse_args()
    other = UNANSWERABLE_FROM[a.project][0]
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        pkg = fetch_package(PROJECTS[a.project].package, a.deb, work)
        opkg = fetch_package(PROJECTS[other].package, a.other_deb, work)
        stats = build(a.project, a.out, pkg, opkg)
    print(json.dumps(stats))


if __name__ == "__main__":
    main()
