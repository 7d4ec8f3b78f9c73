"""Build git-docs-qa: a retrieval QA evaluation set from Git's own documentation.

Everything comes from Debian packages; nothing is written by hand except the choice rules below:

- corpus: every ``.html`` page of ``git-doc`` (Git's manual pages, guides, howtos, technical
  docs), byte-identical, except the two pages the questions come from;
- questions: (1) every entry of ``gitfaq.html`` whose answer links to a page of the corpus and
  (2) every section of ``user-manual.html`` whose heading is phrased as a question or task
  ("How to …", "What to do when …", "Why …", "Recovering lost changes") and whose own text (not its subsections) links to
  a page of the corpus. gitfaq alone has only 9 linked entries, too few to measure anything;
- relevance: the targets of those links (``page.html`` or ``page.html#anchor``), as the
  documentation's authors wrote them;
- unanswerable: the FAQ entries of Django's documentation (``python-django-doc``) on installing
  and using Django, its models and its admin, which Git's documentation does not cover. The
  general pages (help, contributing, general) are left out: "Where can I get help?" is a
  question Git's docs do answer for Git.

Usage::

    python bench/data/build_git_qa.py OUT_DIR [--git-deb FILE] [--django-deb FILE]

Without ``--*-deb`` the packages are fetched with ``apt-get download`` into a temporary folder
(run ``apt-get update`` first). The set is written to OUT_DIR with a README recording package
versions, sha256 sums and the licence.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from bs4 import BeautifulSoup, Tag

GIT_ROOT = "usr/share/doc/git-doc"
DJANGO_ROOT = "usr/share/doc/python-django-doc/html"
QUESTION_PAGES = ("gitfaq.html", "user-manual.html")
DJANGO_FAQ_PAGES = ("faq/install.html", "faq/usage.html", "faq/models.html", "faq/admin.html",
                    "faq/troubleshooting.html")
# A question ("How to merge", "What to do when a push fails") or a task ("Recovering lost
# changes", "Creating tags": a heading that starts with a verb's -ing form).
QUESTION_HEADING = re.compile(r"^(?i:how|what|why|when|which|can|should|do|does|is)\b|\?$|^[A-Z][a-z]+ing\b")


@dataclass(frozen=True)
class Package:
    name: str
    version: str
    deb: Path
    sha256: str
    root: Path  # extracted tree


def _ws(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def fetch_package(name: str, deb: Path | None, work: Path) -> Package:
    if deb is None:
        subprocess.run(["apt-get", "download", name], cwd=work, check=True, capture_output=True)
        deb = next(work.glob(f"{name}_*.deb"))
    version = subprocess.run(["dpkg-deb", "-f", str(deb), "Version"], check=True, capture_output=True, text=True).stdout.strip()
    root = work / f"x-{name}"
    subprocess.run(["dpkg-deb", "-x", str(deb), str(root)], check=True)
    return Package(name, version, deb, hashlib.sha256(deb.read_bytes()).hexdigest(), root)


def resolve(href: str, page: str, corpus: set[str]) -> str | None:
    """A link's target relative to the doc root, if it is a corpus page (``path#anchor``)."""
    if re.match(r"^[a-z]+:", href) or href.startswith("#"):
        return None
    path, _, anchor = href.partition("#")
    parts: list[str] = []
    for p in (PurePosixPath(page).parent / path).parts:
        if p == "..":
            parts = parts[:-1]
        elif p != ".":
            parts.append(p)
    target = "/".join(parts)
    if target not in corpus:
        return None
    return f"{target}#{anchor}" if anchor else target


def _question(qid: str, question: str, answer: str, relevant: list[str], source: str) -> dict:
    docs = list(dict.fromkeys(r.split("#")[0] for r in relevant))
    return {"id": qid, "question": question, "answer": answer, "relevant": relevant,
            "relevant_docs": docs, "source": source, "answerable": bool(relevant)}


def gitfaq_entries(html: str) -> list[tuple[str, str, list[str]]]:
    """(question, answer text, hrefs) for every gitfaq entry (a <dt>/<dd> pair)."""
    soup = BeautifulSoup(html, "html.parser")
    out = []
    for dt in soup.find_all("dt"):
        dd = dt.find_next_sibling("dd")
        if dd is None:
            continue
        out.append((_ws(dt.get_text(" ")), _ws(dd.get_text(" ")), [a["href"] for a in dd.find_all("a", href=True)]))
    return out


def _own_content(heading: Tag) -> list[Tag]:
    """The elements of a section up to its first subsection (asciidoc: siblings of the title div)."""
    title_div = heading.find_parent("div", class_="titlepage") or heading
    out = []
    for sib in title_div.find_next_siblings():
        if isinstance(sib, Tag) and "section" in (sib.get("class") or []):
            break
        out.append(sib)
    return out


def manual_entries(html: str) -> list[tuple[str, str, list[str]]]:
    soup = BeautifulSoup(html, "html.parser")
    out = []
    for h in soup.find_all(["h2", "h3", "h4"]):
        heading = _ws(h.get_text(" "))
        if not QUESTION_HEADING.search(heading):
            continue
        body = _own_content(h)
        text = _ws(" ".join(b.get_text(" ") for b in body))
        hrefs = [a["href"] for b in body for a in b.find_all("a", href=True)]
        out.append((heading, text, hrefs))
    return out


def django_unanswerable(root: Path) -> list[dict]:
    out = []
    n = 0
    for page in DJANGO_FAQ_PAGES:
        soup = BeautifulSoup((root / page).read_text(encoding="utf-8"), "html.parser")
        for sec in soup.select("div.section[id]"):
            h = sec.find(["h2", "h3"], recursive=False)
            if h is None:
                continue
            for link in h.select("a.headerlink"):
                link.decompose()
            n += 1
            q = _ws(h.get_text(" "))
            ans = _ws(" ".join(e.get_text(" ") for e in sec.find_all(recursive=False) if e is not h))
            out.append({"id": f"dj-faq-{n:04d}", "question": q, "answer": ans, "relevant": [], "relevant_docs": [],
                        "source": f"{page}#{sec['id']}", "answerable": False})
    return out


def build(out: Path, git: Package, django: Package) -> dict:
    groot = git.root / GIT_ROOT
    pages = sorted(p.relative_to(groot).as_posix() for p in groot.rglob("*.html"))
    corpus = {p for p in pages if p not in QUESTION_PAGES}
    if out.exists():
        shutil.rmtree(out)
    for p in sorted(corpus):
        (out / "corpus" / p).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(groot / p, out / "corpus" / p)
    questions, n = [], 0
    counts = {}
    for page, parse in (("gitfaq.html", gitfaq_entries), ("user-manual.html", manual_entries)):
        entries = parse((groot / page).read_text(encoding="utf-8"))
        counts[page] = len(entries)
        for q, ans, hrefs in entries:
            n += 1
            rel = list(dict.fromkeys(t for h in hrefs if (t := resolve(h, page, corpus))))
            if rel:
                questions.append(_question(f"git-q-{n:04d}", q, ans, rel, page))
    unanswerable = django_unanswerable(django.root / DJANGO_ROOT)
    for name, rows in (("questions.jsonl", questions), ("unanswerable.jsonl", unanswerable)):
        with open(out / name, "w", encoding="utf-8") as f:
            for r in sorted(rows, key=lambda r: r["id"]):
                f.write(json.dumps(r, ensure_ascii=False) + "\n")
    stats = {"pages": len(corpus), "bytes": sum((groot / p).stat().st_size for p in corpus),
             "entries": counts, "questions": len(questions), "links": sum(len(q["relevant"]) for q in questions),
             "unanswerable": len(unanswerable)}
    (out / "README.md").write_text(readme(git, django, stats), encoding="utf-8")
    return stats


# The part of a set's README that says what its files hold: the same for every set these scripts
# build (build_sphinx_faq_qa.py imports it).
FILES_SECTION = """## Files

Same format as django-docs-qa: `questions.jsonl` and `unanswerable.jsonl` hold
`{"id", "question", "answer", "relevant", "relevant_docs", "source", "answerable"}`, `relevant`
being `page.html` or `page.html#anchor` relative to `corpus/`. Relevance judgements are the
authors' links and are incomplete: other pages may answer a question too.
"""


def readme(git: Package, django: Package, s: dict) -> str:
    return f"""# Git documentation: retrieval QA evaluation set

Built by `bench/data/build_git_qa.py` from Debian packages; the questions, answers and relevance
links come from Git's documentation authors (see the builder's docstring for the selection rules).

## Source

- Corpus, questions: Debian package `{git.name}` version `{git.version}`, file `{git.deb.name}`,
  sha256 `{git.sha256}`.
- Unanswerable questions: Django FAQ entries ({", ".join(DJANGO_FAQ_PAGES)}) from Debian package
  `{django.name}` version `{django.version}`, file `{django.deb.name}`, sha256 `{django.sha256}`.

## Licence

Git's documentation: GPL-2.0 (`Files: *` stanza of `/usr/share/doc/git-doc/copyright`:
"Copyright: © 2005-2022, Linus Torvalds and others. License: GPL-2"). Django's FAQ text
(unanswerable.jsonl): BSD-3-Clause (Django Software Foundation and individual contributors).

## Counts

| what | count |
| --- | --- |
| corpus pages (`corpus/**/*.html`; all of git-doc's .html pages but {", ".join(QUESTION_PAGES)}) | {s['pages']} |
| corpus size (bytes) | {s['bytes']} |
| gitfaq entries / user-manual question-form sections found | {s['entries']['gitfaq.html']} / {s['entries']['user-manual.html']} |
| questions (entries whose answer links into the corpus) | {s['questions']} |
| relevance links | {s['links']} |
| unanswerable | {s['unanswerable']} |

{FILES_SECTION}"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--git-deb", type=Path)
    ap.add_argument("--django-deb", type=Path)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        stats = build(a.out, fetch_package("git-doc", a.git_deb, work), fetch_package("python-django-doc", a.django_deb, work))
    print(json.dumps(stats))


if __name__ == "__main__":
    main()
