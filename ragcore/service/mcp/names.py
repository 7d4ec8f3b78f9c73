"""The MCP tools' collection names go through the service's one resolver
(``ragcore.storage.names.resolve_collection``): a tool refuses exactly what every HTTP route, the CLI
and the store refuse, and an unknown collection is a tool error naming it, never a path."""

from __future__ import annotations

from typing import Callable

from ragcore.service.mcp.errors import ToolProblem
from ragcore.storage.names import CollectionRefused, checked_name
from ragcore.storage.names import resolve_collection as resolve


def resolve_collection(name: object, exists: Callable[[str], bool] | None = None) -> str:
    """``name`` when it may name a collection (and, given ``exists``, names one), else
    :class:`ToolProblem` with the resolver's reason."""
    try:
        return checked_name(name) if exists is None else resolve(name, exists)
    except CollectionRefused as exc:
        raise ToolProblem(exc.reason) from None
