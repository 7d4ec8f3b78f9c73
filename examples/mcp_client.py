"""Calling ragcore's MCP server with the official `mcp` SDK's client, over stdio or HTTP.

    python examples/mcp_client.py stdio            # starts `ragcore mcp` itself
    python examples/mcp_client.py http://127.0.0.1:8000/mcp [API_KEY]

It lists the tools, then calls each read-only one on the first collection (tests run `call_every_tool`)."""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

from mcp import Client, StdioServerParameters


def stdio_server(*ragcore_args: str, env: dict[str, str] | None = None) -> StdioServerParameters:
    """`ragcore [ragcore_args] mcp` as the client's subprocess (e.g. ("--data-dir", "/data"))."""
    return StdioServerParameters(command=sys.executable, args=["-m", "ragcore.cli.main", *ragcore_args, "mcp"], env=env)


def http_server(url: str, key: str | None = None) -> Any:
    """The streamable-HTTP transport to `/mcp` on `ragcore serve`, with its Bearer key."""
    import httpx2

    from mcp.client.streamable_http import streamable_http_client

    headers = {"Authorization": f"Bearer {key}"} if key else {}
    return streamable_http_client(url, http_client=httpx2.AsyncClient(headers=headers, timeout=120))


async def call_every_tool(server: Any, question: str) -> dict[str, Any]:
    """Tool names, then each tool's output (JSON) or error text, keyed by tool."""
    out: dict[str, Any] = {}
    async with Client(server, read_timeout_seconds=120) as client:
        out["tools"] = sorted(t.name for t in (await client.list_tools()).tools)

        async def call(name: str, args: dict[str, Any]) -> Any:
            result = await client.call_tool(name, args)
            text = result.content[0].text if result.content else ""
            return {"error": text} if result.is_error else json.loads(text)

        out["list_collections"] = await call("list_collections", {})
        collection = out["list_collections"]["collections"][0]["name"]
        out["search"] = await call("search", {"collection": collection, "question": question, "top_k": 3})
        hit = out["search"]["evidence"][0]
        out["read"] = await call("read", {"collection": collection, "path": hit["path"], "start": hit["start_line"],
                                          "end": hit["end_line"]})
        out["ask"] = await call("ask", {"collection": collection, "question": question})
    return out


if __name__ == "__main__":
    target = sys.argv[1] if len(sys.argv) > 1 else "stdio"
    srv = stdio_server() if target == "stdio" else http_server(target, sys.argv[2] if len(sys.argv) > 2 else None)
    print(json.dumps(asyncio.run(call_every_tool(srv, "What is reciprocal rank fusion?")), indent=2)[:4000])
