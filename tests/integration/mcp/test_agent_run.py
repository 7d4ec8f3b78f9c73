"""An OpenAI Agents SDK run (examples/openai_agent.py) with ragcore's search as its tool, against the
scripted OpenAI-protocol server on 127.0.0.1: the model calls search, then writes a final answer
citing an id from the tool's output and one id it made up. The answer's citations come from the
captured tool output only; the invented id is stripped and reported."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import re
from pathlib import Path

import pytest

pytest.importorskip("agents")

from ragcore.citations import SupportScorer  # noqa: E402
from ragcore.engine.engine import Engine  # noqa: E402
from ragcore.service.mcp.tools import RagTools  # noqa: E402
from ragcore.service.limits import Slots  # noqa: E402
from tests.integration.service.conftest import base_settings  # noqa: E402
from bench.support.scripted_openai import Computed, Text, ToolCall  # noqa: E402

REPO = Path(__file__).resolve().parents[3]
QUESTION = "What is reciprocal rank fusion?"
INVENTED = "ev-0123456789ab"


def _example():
    spec = importlib.util.spec_from_file_location("openai_agent_example", REPO / "examples" / "openai_agent.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _final_answer(body: dict) -> Text:
    """What a model would write after reading the tool's output: a sentence of the best evidence,
    cited by its id, and a claim cited by an id no tool returned."""
    tool_msgs = [m for m in body["messages"] if m.get("role") == "tool"]
    found = json.loads(tool_msgs[-1]["content"])
    best = found["evidence"][0]
    sentence = next(s for s in re.split(r"(?<=\.)\s+", " ".join(best["text"].split())) if "Reciprocal Rank Fusion" in s)
    return Text(f"{sentence} [{best['id']}] Fusion also doubles every score [{INVENTED}].")


@pytest.fixture()
def engine(guide_data: Path, encoder):
    e = Engine(base_settings(guide_data), encoder=encoder)
    yield e
    e.close()


def test_agent_citations_come_from_the_tool_outputs(engine, llm_server) -> None:
    example = _example()
    llm_server.script([ToolCall("search", {"collection": "guide", "question": QUESTION, "top_k": 3}),
                       Computed(_final_answer)])
    tools = RagTools(engine, Slots(2, 4, 1), 60.0)
    result, cited = asyncio.run(example.run_agent(tools, llm_server.base_url, "scripted", QUESTION,
                                                  scorer=SupportScorer(encoder=engine.encoder.encode)))
    posts = llm_server.generation_requests()[-2:]
    assert [t["function"]["name"] for t in posts[0].body["tools"]] == ["search"]
    assert any(m.get("role") == "tool" for m in posts[1].body["messages"])  # the tool ran; its output went back

    assert cited.invented_ids == (INVENTED,) and INVENTED not in cited.text
    assert cited.citations and [c.n for c in cited.citations] == [1]
    seen = {s.id: s for s in cited.sources}
    for c in cited.citations:  # every citation points at lines some tool returned
        src = seen[cited.ids[c.n]]
        assert src.tool == "search" and c.path == src.path
        assert src.start_line <= c.start_line <= c.end_line <= src.end_line
        assert c.support >= 0.9  # a sentence quoted from the evidence
    assert "[1]" in cited.text and not cited.ok  # the invented id (and its now uncited claim) is reported
    assert cited.validation.uncited == ("Fusion also doubles every score.",)


def test_a_session_scoped_to_a_selection_offers_the_agent_no_search(engine) -> None:
    from ragcore.engine.stages import SelectionInput

    example = _example()
    tools = RagTools(engine, Slots(2, 4, 1), 60.0, selection=SelectionInput("Access tokens expire after ten minutes. "
                                                                            "Refresh tokens last thirty days.", "notes"))
    assert [t.name for t in example.ragcore_tools(tools)] == ["ask"]
