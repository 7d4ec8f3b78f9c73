"""The notebook's "Evidence and checks" table: its data (ui.cells.evidence_frame) and its HTML view
(ui.cells.evidence_table_html) — hostile document text stays inert, long cells are shortened with
the full text on hover, "–" for absent values, kept/cut reasons in rank order.

Pure functions on answer dicts: no app, no model. The HTML is read back with the standard library's
HTML parser, as a browser would, so an escaping slip shows up as an extra tag or a wrong attribute."""

from __future__ import annotations

from html.parser import HTMLParser

from ui.cells import EVIDENCE_COLUMNS, evidence_frame, evidence_table_html
from ui.notebook import Run

HOSTILE_PATH = 'docs/"><img src=x onerror=alert(1)>/a-very-long-folder-name/[guide](javascript:alert(2)).md'
HOSTILE_SECTION = ["Intro <script>alert(3)</script>", "Use `rm -rf` & [x](javascript:alert(4)) \"quoted\" 'single'"]
HOSTILE_TEXT = "<script>alert(5)</script>\n\"><img src=x onerror=alert(6)>\n**bold** [link](javascript:alert(7)) `code` $x^2$"
ALLOWED_TAGS = {"style", "div", "table", "colgroup", "col", "thead", "tbody", "tr", "th", "td"}


def _chunk(cid: str, path: str, start: int, section: list[str], text: str = "some text") -> dict:
    return {"chunk_id": cid, "path": path, "start_line": start, "end_line": start + 4, "section": section, "text": text}


def _cand(cid: str, rank: int, kept: bool, reason: str | None, chunk: dict, dense=0.5, sparse=2.0, fused=0.1) -> dict:
    return {"chunk": chunk, "rank": rank, "kept": kept, "dropped_reason": reason, "dense_score": dense,
            "sparse_score": sparse, "fused_score": fused, "origin": "corpus"}


def _run(evidence: list[dict], candidates: list[dict], cited: tuple[int, ...] = ()) -> Run:
    return Run(answer={"answer": "x", "citations": [{"n": n} for n in cited], "evidence": evidence,
                       "candidates": candidates}, outcome="ok")


class _Cells(HTMLParser):
    """Rows of (tag, attrs, text) cells and every start tag seen."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.rows: list[list[tuple[str, dict, str]]] = []
        self._cell: list | None = None

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        if tag == "tr":
            self.rows.append([])
        elif tag in ("td", "th"):
            self._cell = [tag, dict(attrs), ""]

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            self.rows[-1].append(tuple(self._cell))
            self._cell = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell[2] += data


def _parse(html: str) -> _Cells:
    p = _Cells()
    p.feed(html)
    p.close()
    return p


def _hostile_run() -> Run:
    ch = _chunk("c1", HOSTILE_PATH, 10, HOSTILE_SECTION, HOSTILE_TEXT)
    return _run([{"n": 1, "chunk": ch, "origin": "corpus", "dense_score": 0.5, "sparse_score": 3.0, "fused_score": 0.2}],
                [_cand("c1", 1, True, None, ch)], cited=(1,))


def test_hostile_document_text_is_inert_and_in_full_on_hover():
    html = evidence_table_html(evidence_frame(_hostile_run()))
    p = _parse(html)
    assert set(p.tags) <= ALLOWED_TAGS, set(p.tags) - ALLOWED_TAGS  # no <script>, <img>, <a> from the document
    assert "<script" not in html and "<img" not in html and "<a " not in html
    header, row = p.rows
    cells = {c[1]["class"]: c for c in row}
    loc, sec, txt = cells["loc"], cells["sec"], cells["txt"]
    # the title attribute, read back as a browser does, is the full text: quotes could not break out of it
    assert loc[1]["title"] == HOSTILE_PATH + ":10-14"
    assert sec[1]["title"] == " › ".join(HOSTILE_SECTION)
    assert txt[1]["title"] == HOSTILE_TEXT
    # what the table shows is shortened (and literal): the locator keeps its end, the section its innermost part
    assert len(loc[2]) == 30 and "…" in loc[2] and loc[2].endswith(".md:10-14")
    assert sec[2] == "› " + HOSTILE_SECTION[-1]
    assert txt[2].startswith("<script>alert(5)</script> \"><img") and "`code`" in txt[2]
    # escaped in the source: every < and " of the document is an entity
    assert '&lt;script&gt;alert(5)&lt;/script&gt;' in html and "&quot;&gt;&lt;img src=x onerror=alert(6)&gt;" in html
    assert "[link](javascript:alert(7))" in html  # markdown is not rendered by st.html: plain text
    assert cells["st"][2] == "cited [1]"


def test_numbers_right_aligned_dash_for_absent_and_kept_cut_reasons_in_rank_order():
    chunks = [_chunk(f"c{i}", f"doc{i}.md", i * 10, ["Doc", f"Part {i}"]) for i in range(1, 9)]
    cands = [
        _cand("c1", 1, True, None, chunks[0]),
        _cand("c2", 2, False, "dedupe", chunks[1], sparse=None),
        _cand("c3", 3, False, "threshold", chunks[2], dense=0.1),
        _cand("c4", 4, True, None, chunks[3]),
        *[_cand(f"c{i}", i, False, "top_k", chunks[i - 1]) for i in range(5, 9)],
    ]
    ev = [{"n": 1, "chunk": chunks[0], "origin": "corpus", "dense_score": 0.5, "sparse_score": None, "fused_score": None},
          {"n": 2, "chunk": chunks[3], "origin": "corpus", "dense_score": 0.4, "sparse_score": 1.5, "fused_score": 0.05}]
    df = evidence_frame(_run(ev, cands, cited=(2,)))
    # down to the last kept (rank 4), then three near misses; rank 8 is left to the lab
    assert list(df["rank"]) == [1, 2, 3, 4, 5, 6, 7]
    assert list(df["status"]) == ["used [1]", "cut: dedupe", "cut: threshold", "cited [2]", "cut: top-K", "cut: top-K", "cut: top-K"]
    header, *rows = _parse(evidence_table_html(df)).rows
    assert [h[2] for h in header] == [c.header for c in EVIDENCE_COLUMNS]
    first = {c[1]["class"]: c for c in rows[0]}
    assert [c[2] for c in rows[0][:5]] == ["1", "used [1]", "0.500", "–", "–"]  # no None, no nan
    assert all(c[1]["class"] == "num" for c in rows[0] if c[2][:1].isdigit() or c[2] == "–")
    assert first["sec"][2] == "› Part 1" and first["sec"][1]["title"] == "Doc › Part 1"
    dedupe = {c[1]["class"]: c for c in rows[1]}
    assert dedupe["st"][1]["title"].startswith("Cut: another passage of the same section")
    assert rows[1][0][2] == "2" and rows[1][3][2] == "–"  # its rank; no BM25 score
    assert [c[2] for c in rows[3][:5]] == ["4", "cited [2]", "0.400", "1.50", "0.0500"]  # the evidence's scores


def test_evidence_without_candidates_and_selections_still_listed():
    sel = _chunk("s1", "(selection)", 3, [])
    old = _chunk("c9", "a.md", 1, [])
    ev = [{"n": 1, "chunk": old, "origin": "corpus", "dense_score": None, "sparse_score": None, "fused_score": 0.2},
          {"n": 2, "chunk": sel, "origin": "selection", "dense_score": 0.3, "sparse_score": None, "fused_score": None}]
    df = evidence_frame(_run(ev, []))  # an older run: its candidate pool was trimmed
    assert df["rank"].isna().all() and list(df["status"]) == ["used [1]", "used [2]"]
    assert df["locator"][1].startswith("selection: ")
    rows = _parse(evidence_table_html(df)).rows[1:]
    assert [c[2] for c in rows[0]][:2] == ["–", "used [1]"]
    assert {c[1]["class"]: c[2] for c in rows[0]}["sec"] == "–" and "title" not in {c[1]["class"]: c for c in rows[0]}["sec"][1]
    assert evidence_frame(_run([], [])).empty


def test_table_is_laid_out_to_fit_its_box():
    html = evidence_table_html(evidence_frame(_hostile_run()))
    assert "table-layout:fixed" in html and "text-overflow:ellipsis" in html and "width:100%" in html
    widths = [c.width for c in EVIDENCE_COLUMNS]
    assert widths.count("auto") == 1  # one column takes what is left, so the fixed ones never push the table wider


def test_a_seated_passage_is_marked_and_its_hover_says_why():
    """The default evidence is the top-K plus one seat (retrieval/passage_seats.py): the notebook's
    table marks the seated row as the lab does, and its status hover explains the seat."""
    from ui.htmltable import SEAT_HELP

    chunks = [_chunk(f"c{i}", f"doc{i}.md", i * 10, ["Doc"]) for i in range(1, 4)]
    cands = [_cand("c1", 1, True, None, chunks[0]), _cand("c2", 2, False, "top_k", chunks[1]),
             {**_cand("c3", 3, True, None, chunks[2]), "seated": True}]
    ev = [{"n": 1, "chunk": chunks[0], "origin": "corpus", "dense_score": 0.5, "sparse_score": 2.0, "fused_score": 0.1},
          {"n": 2, "chunk": chunks[2], "origin": "corpus", "dense_score": 0.4, "sparse_score": 1.0, "fused_score": 0.05,
           "seated": True}]
    df = evidence_frame(_run(ev, cands, cited=(2,)))
    assert list(df["status"]) == ["used [1]", "cut: top-K", "cited [2] seat"]
    assert list(df["seated"]) == [False, False, True]
    rows = _parse(evidence_table_html(df)).rows[1:]
    seat = {c[1]["class"]: c for c in rows[2]}
    assert seat["st"][2] == "cited [2] seat" and seat["st"][1]["title"] == SEAT_HELP
    assert "title" not in {c[1]["class"]: c for c in rows[0]}["st"][1]  # a plain kept row has no hover
