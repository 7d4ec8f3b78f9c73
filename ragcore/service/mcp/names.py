"""The one place the MCP tools check a collection name: through the project's name rule
(``ragcore.storage.names``), so a tool refuses exactly what the CLI and the store refuse.
A single call site on purpose: a shared resolver can replace the body without touching a tool."""

from __future__ import annotations

from ragcore.service.mcp.errors import ToolProblem
from ragcore.storage.names import collection_name_problem


def resolve_collection(name: str) -> str:
    """``name`` when it may name a collection, else :class:`ToolProblem` saying why."""
    problem = collection_name_problem(name)
    if problem:
        raise ToolProblem(problem)
    return name
