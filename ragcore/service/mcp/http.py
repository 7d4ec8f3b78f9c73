"""``/mcp`` on ``ragcore serve``: the MCP server over streamable HTTP, inside the service's app, so
every request to it passes the same middleware as the REST routes (Bearer keys, the body limit, the
access log) and every tool call takes the same question slots and deadline (``Service.slots``).

Sessions (``Mcp-Session-Id``), as MCP clients open them: a stateless server builds a transport and
a server task per request, which cost ~12 ms a call here against ~1 ms with a session (bench serve
--mcp). With ``--workers N`` a session's requests could reach another process, so there the server
is stateless. Replies are plain JSON, not Server-Sent Events: an SSE reply costs the SDK a task
group and a stream per request, which under load put MCP ``search`` at +21% over ``/api/retrieve``
at p50 against +3% with JSON (bench/results/serve-mcp.md). So over HTTP ``ask`` sends no progress
notifications (over stdio it does); cancelling works on both."""

from __future__ import annotations

from contextlib import asynccontextmanager
from typing import Any, AsyncIterator, Callable

MCP_PATH = "/mcp"


def mount_mcp(app: Any, service: Any) -> Callable[[], Any]:
    """Add ``/mcp`` to ``app``; returns the async context manager the app's lifespan enters (the
    SDK's session manager). Without the ``mcp`` extra the app has no ``/mcp`` and this is a no-op."""
    try:
        from mcp.server.transport_security import TransportSecuritySettings
    except ImportError:
        return _nothing
    from ragcore.service.mcp.server import build_server
    from ragcore.service.mcp.tools import RagTools

    settings = service.settings
    tools = RagTools(service.engine, service.slots, settings.deadline_s, allow_ingest=False)
    server = build_server(tools)
    # on loopback the SDK's Host/Origin checks stop DNS rebinding; off loopback the keys guard the
    # service and its host name is the operator's business
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=settings.loopback, allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*"],
        allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"])
    sub_app = server.streamable_http_app(streamable_http_path=MCP_PATH, stateless_http=settings.workers > 1,
                                         json_response=True, transport_security=security,
                                         max_request_body_size=settings.max_body_bytes)
    app.router.routes.extend(r for r in sub_app.routes if getattr(r, "path", None) == MCP_PATH)
    return server.session_manager.run


@asynccontextmanager
async def _nothing() -> AsyncIterator[None]:
    yield
