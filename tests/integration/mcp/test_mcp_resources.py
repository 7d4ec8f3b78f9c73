"""The MCP server's resources, read with the SDK's client (in process): the collections, a
collection's documents, and lines of a document by locator (``ragcore://guide/PATH#L3-L5``, the
locator every tool output carries); a path outside the collection is refused."""

from __future__ import annotations

import json

import anyio
import pytest

pytest.importorskip("mcp")

from mcp import Client  # noqa: E402

from ragcore.engine.engine import Engine  # noqa: E402
from ragcore.service.mcp.server import build_server  # noqa: E402
from ragcore.service.mcp.tools import RagTools  # noqa: E402
from ragcore.service.limits import Slots  # noqa: E402
from tests.integration.service.conftest import base_settings  # noqa: E402

PAGE = "08-selected-text-mode.md"


def test_resources_by_locator(guide_data, encoder) -> None:
    engine = Engine(base_settings(guide_data), encoder=encoder)
    server = build_server(RagTools(engine, Slots(2, 4, 1), 60.0))

    async def main():
        async with Client(server) as client:
            listed = [str(r.uri) for r in (await client.list_resources()).resources]
            templates = [t.uri_template for t in (await client.list_resource_templates()).resource_templates]
            read = {}
            for uri in ("ragcore://collections", "ragcore://guide", f"ragcore://guide/{PAGE}#L3-L5", f"ragcore://guide/{PAGE}"):
                read[uri] = json.loads((await client.read_resource(uri)).contents[0].text)
            with pytest.raises(Exception) as refused:
                await client.read_resource("ragcore://guide/..%2F..%2Fetc%2Fpasswd#L1-L2")
            with pytest.raises(Exception) as climbing:
                await client.read_resource("ragcore://guide/docs/../../../etc/passwd#L1-L2")
            with pytest.raises(Exception) as missing:
                await client.read_resource("ragcore://guide/not-there.md#L1-L2")
            assert "Traceback" not in str(climbing.value)
            return listed, templates, read, str(refused.value), str(missing.value)

    try:
        listed, templates, read, refused, missing = anyio.run(main)
    finally:
        engine.close()
    assert listed == ["ragcore://collections"]
    assert "ragcore://{collection}/{+path}#{lines}" in templates
    assert read["ragcore://collections"]["collections"][0]["name"] == "guide"
    assert PAGE in [d["path"] for d in read["ragcore://guide"]["documents"]]
    lines = read[f"ragcore://guide/{PAGE}#L3-L5"]
    assert [x["n"] for x in lines["lines"]] == [3, 4, 5] and lines["locator"] == f"ragcore://guide/{PAGE}#L3-L5"
    assert read[f"ragcore://guide/{PAGE}"]["start_line"] == 1
    assert "Traceback" not in refused and "Traceback" not in missing
    assert "not a document of collection 'guide'" in missing
    assert "Unknown resource" in refused or "outside the collection" in refused  # the SDK's path check, or read's
