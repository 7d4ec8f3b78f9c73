"""A site's banner, menu and table of contents before the first heading are chrome even when no class
or role says so (issue 42, item 2: "Small. Fast. Reliable… Home Menu About…" and a table of contents
were the first chunks of every page)."""

from __future__ import annotations

from pathlib import Path

from ragcore.ingest.read.html import extract_html

PAGE = Path(__file__).resolve().parents[2] / "data" / "loaders" / "site-chrome.html"


def test_a_link_dense_banner_and_contents_before_the_first_heading_are_dropped() -> None:
    lines, title = extract_html(PAGE.read_text(encoding="utf-8"))
    texts = [ln.text for ln in lines if ln.text]
    assert texts[0] == "1. Introduction" and title == "Widget Guide"
    assert not any(t in texts for t in ("- Home", "Small. Quick. Dependable.", "2.1. Install", "► Table Of Contents"))
    assert any("default is 10 items" in t for t in texts)
    assert lines[0].no == 28  # the lines kept keep their source numbers


def test_an_introduction_before_the_first_heading_stays() -> None:
    page = ("<html><body>\n<p>This guide explains the widget, see <a href='a.html'>the index</a> for more.</p>\n"
            "<h1>Setup</h1>\n<p>Install it.</p>\n</body></html>")
    texts = [ln.text for ln in extract_html(page)[0] if ln.text]
    assert texts[0].startswith("This guide explains the widget")


def test_a_page_of_links_without_headings_keeps_its_links() -> None:
    page = "<html><body>\n<ul>\n<li><a href='a.html'>Alpha</a></li>\n<li><a href='b.html'>Beta</a></li>\n</ul>\n</body></html>"
    assert [ln.text for ln in extract_html(page)[0] if ln.text] == ["- Alpha", "- Beta"]
