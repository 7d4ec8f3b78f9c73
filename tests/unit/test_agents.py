"""ragcore.agents: an agent's final text checked against the tool outputs it saw (plain JSON, as the
MCP tools return them). No model and no server: the support scorer's lexical part."""

from __future__ import annotations

import json

from ragcore.agents import cite_agent_answer, evidence_in
from ragcore.service.mcp.lines import document_lines, line_range, path_problem
from ragcore.service.mcp.outputs import evidence_id, locator, read_output
from ragcore.types import Chunk

TEXT = "Tokens are signed with HMAC.\nAccess tokens expire after ten minutes.\nRefresh tokens last thirty days."
CHUNK = Chunk(chunk_id="a1" * 16, text=TEXT, path="docs/auth.md", doc_hash="h", kind="markdown", start_line=10, end_line=12)
OTHER = Chunk(chunk_id="b2" * 16, text="Sessions are stored in the database.", path="docs/sessions.md", doc_hash="h",
              kind="markdown", start_line=3, end_line=3)


def _search(*chunks: Chunk) -> str:
    return json.dumps({"collection": "docs", "evidence": [
        {"id": evidence_id(c.chunk_id), "path": c.path, "start_line": c.start_line, "end_line": c.end_line,
         "kind": c.kind, "score": 0.5, "score_kind": "rrf", "text": c.text, "locator": locator("docs", c.path, c.start_line, c.end_line)}
        for c in chunks]})


def test_ids_become_numbers_in_order_of_first_use_and_lines_narrow() -> None:
    a, b = evidence_id(CHUNK.chunk_id), evidence_id(OTHER.chunk_id)
    text = f"Sessions are stored in the database [{b}]. Access tokens expire after ten minutes [{a}, {b}]."
    cited = cite_agent_answer(text, [_search(CHUNK), _search(OTHER, CHUNK)])
    assert cited.ids == {1: b, 2: a}
    assert cited.text == "Sessions are stored in the database [1]. Access tokens expire after ten minutes [2][1]."
    by_n = {c.n: c for c in cited.citations}
    assert (by_n[2].path, by_n[2].start_line, by_n[2].end_line) == ("docs/auth.md", 11, 11)  # the supporting line
    assert by_n[2].support > 0.9 and cited.ok


def test_invented_ids_and_bare_numbers_are_stripped_and_reported() -> None:
    a = evidence_id(CHUNK.chunk_id)
    text = f"Access tokens expire after ten minutes [{a}]. Tokens never expire [ev-ffffffffffff]. See also [3]."
    cited = cite_agent_answer(text, [_search(CHUNK)])
    assert cited.invented_ids == ("ev-ffffffffffff",) and cited.stripped_markers == ("[3]",)
    assert "ev-ffffffffffff" not in cited.text and "[3]" not in cited.text
    assert [c.n for c in cited.citations] == [1] and not cited.ok
    assert "Tokens never expire." in cited.validation.uncited


def test_a_read_range_is_citable_and_other_outputs_are_skipped() -> None:
    lines = line_range(document_lines([CHUNK]), 11, 12)
    out = read_output("docs", "docs/auth.md", lines, 12, [CHUNK])
    assert out["chunks"] == [{"id": evidence_id(CHUNK.chunk_id), "start_line": 10, "end_line": 12}]
    cited = cite_agent_answer(f"Refresh tokens last thirty days [{out['id']}].", [json.dumps(out), "error: busy", 42])
    assert [(c.path, c.start_line, c.end_line) for c in cited.citations] == [("docs/auth.md", 12, 12)]
    assert [s.tool for s in evidence_in([out])] == ["read"]


def test_read_refuses_paths_outside_the_collection_and_bad_ranges() -> None:
    assert path_problem("docs/auth.md") is None
    for bad in ("../etc/passwd", "/etc/passwd", "docs/../../x", "a\\b", ""):
        assert path_problem(bad)
    lines = document_lines([CHUNK])
    assert line_range(lines, 1, 10) == [(n, "") for n in range(1, 10)] + [(10, "Tokens are signed with HMAC.")]
    for start, end in ((0, 3), (5, 4), (13, 14)):
        try:
            line_range(lines, start, end)
        except Exception as exc:  # noqa: BLE001
            assert type(exc).__name__ == "ToolProblem"
        else:
            raise AssertionError((start, end))
