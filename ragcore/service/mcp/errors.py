"""Why a tool call failed, in words an agent can act on. Raised by the tools and turned into an
MCP tool error (``isError: true`` with this text) by ``server.py``; never a traceback."""

from __future__ import annotations


class ToolProblem(Exception):
    """A refusal or failure with its reason (the message is shown to the agent as is)."""
