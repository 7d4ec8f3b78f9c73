"""An OpenAI Agents SDK agent (``pip install openai-agents``) with ragcore's ``search`` as its tool,
and its final answer's citations checked against what the tool returned (``ragcore.agents``).

The tool is the same function the MCP server's ``search`` runs (``RagTools.search``), with the same
argument names. After the run, every tool output the agent saw is handed to
``cite_agent_answer``: ids the agent cites become numbered, checked citations narrowed to the lines
that support each sentence; an id no tool returned is stripped and reported. With a selection, the
agent gets ``ask`` scoped to that passage and no search (selected-text mode).

    python examples/openai_agent.py http://127.0.0.1:8080/v1 MODEL "your question"
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

from agents import Agent, OpenAIChatCompletionsModel, Runner, function_tool, set_tracing_disabled
from openai import AsyncOpenAI

from ragcore.agents import AgentCitations, cite_agent_answer
from ragcore.service.mcp.errors import ToolProblem
from ragcore.service.mcp.outputs import json_text
from ragcore.service.mcp.tools import RagTools

INSTRUCTIONS = ("Answer from the documents only. Call search first; cite every sentence with the evidence ids "
                "the tool returned, in square brackets, e.g. [ev-3f2a9b1c0d4e].")


def ragcore_tools(tools: RagTools) -> list[Any]:
    """Function tools over ragcore: ``search`` (or, in a session scoped to a selection, ``ask`` only)."""

    @function_tool
    async def search(collection: str, question: str, top_k: int | None = None) -> str:
        """Search a ragcore collection; evidence comes back ranked with an id to cite and a locator.

        Args:
            collection: a collection name.
            question: the question, in natural language.
            top_k: how much evidence to keep (default: the server's).
        """
        try:
            return json_text(await tools.search(collection, question, top_k))
        except ToolProblem as exc:  # a reason the model can act on, as the MCP server gives it
            return f"error: {exc}"

    @function_tool
    async def ask(collection: str, question: str) -> str:
        """Ask ragcore for a checked answer from the passage this session is scoped to.

        Args:
            collection: a collection name.
            question: the question, in natural language.
        """
        try:
            return json_text(await tools.ask(collection, question))
        except ToolProblem as exc:
            return f"error: {exc}"

    return [ask] if tools.selection is not None else [search]


async def run_agent(tools: RagTools, base_url: str, model: str, question: str, api_key: str = "none",
                    scorer: Any = None) -> tuple[Any, AgentCitations]:
    """Run the agent to its final answer; (the run's result, its checked citations)."""
    set_tracing_disabled(True)  # no traces sent anywhere
    llm = OpenAIChatCompletionsModel(model=model, openai_client=AsyncOpenAI(base_url=base_url, api_key=api_key))
    agent = Agent(name="analyst", instructions=INSTRUCTIONS, tools=ragcore_tools(tools), model=llm)
    result = await Runner.run(agent, question, max_turns=6)
    outputs = [item.output for item in result.new_items if item.type == "tool_call_output_item"]
    return result, cite_agent_answer(str(result.final_output), outputs, scorer=scorer)


if __name__ == "__main__":
    from ragcore.engine.engine import Engine
    from ragcore.service.limits import Slots
    from ragcore.settings.config import RagcoreSettings

    engine = Engine(RagcoreSettings.from_env())
    _, cited = asyncio.run(run_agent(RagTools(engine, Slots(2, 4, 1), 60.0), sys.argv[1], sys.argv[2], sys.argv[3]))
    print(cited.text)
    for c in cited.citations:
        print(f"[{c.n}] {cited.ids[c.n]} {c.path}:{c.start_line}-{c.end_line} support {c.support:.2f}")
    if cited.invented_ids:
        print("stripped (no tool returned them):", ", ".join(cited.invented_ids))
