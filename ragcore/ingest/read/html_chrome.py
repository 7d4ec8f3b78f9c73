"""Page chrome that carries no class or role to recognise it by: the banner, menu and table of
contents a site puts before a page's first heading.

html.py drops what is marked as chrome (``<nav>``, ``role=navigation``, sidebars …) and keeps only the
main content when a page marks it. A hand-made site marks neither, and its "Small. Fast. Reliable …
Home Menu About …" banner and a 120-line table of contents became the page's first chunks, quoted as
evidence. What gives them away is that they are made of links: when the text before the first heading is
mostly link text, it is dropped. An introduction before the first heading is prose and stays, and so
does a page with no heading at all (a list of links may be all it has).
"""

from __future__ import annotations

from typing import Sequence

# share of the characters before the first heading that are link text, from which they are chrome: a
# menu with a tagline and a contents list is ~0.75 of links, an introduction with a link or two well
# under 0.2
LINK_SHARE = 0.5


def drop_leading_chrome(records: Sequence[list]) -> list[list]:
    """``records`` ([line, text, section, anchor, main, link characters], html.py) without the link-dense
    run before the first heading (a record with a section)."""
    first = next((i for i, r in enumerate(records) if r[1] and r[2]), None)
    if not first:
        return list(records)
    lead = records[:first]
    chars = sum(len(r[1]) for r in lead)
    links = sum(r[5] for r in lead)
    if chars and links / chars >= LINK_SHARE:
        return list(records[first:])
    return list(records)
