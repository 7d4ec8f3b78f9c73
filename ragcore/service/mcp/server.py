"""The MCP server over :class:`~ragcore.service.mcp.tools.RagTools` (official ``mcp`` SDK, ``MCPServer``).

Tools: ``list_collections``, ``search``, ``ask``, ``read`` (read-only) and ``ingest`` (only when
the server was started with ``--allow-ingest``; additive, never destructive). A session scoped to a
selection (``selection=``) offers ``ask`` alone: no search, so the agent answers from the passage.
Resources: ``ragcore://collections``, ``ragcore://{collection}`` (its documents),
``ragcore://{collection}/{path}`` (a document's first lines) and
``ragcore://{collection}/{path}#L10-L20`` (lines of a document, as ``read`` gives them).
A failed call is an MCP tool error (``isError``) whose text is the reason (``ToolProblem``).
"""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import BaseModel, Field

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from mcp.types import ToolAnnotations

from ragcore.service.errors import without_paths
from ragcore.service.mcp.errors import ToolProblem
from ragcore.service.mcp.lines import MAX_READ_LINES
from ragcore.service.mcp.outputs import json_text
from ragcore.service.mcp.tools import RagTools, UploadedText

INSTRUCTIONS = """ragcore answers questions from document collections with citations. Call list_collections
first, then search (ranked evidence with ids) or ask (a checked answer). Every piece of evidence has an
id like ev-3f2a9b1c0d4e and a locator ragcore://COLLECTION/PATH#L10-L20: cite the ids in square brackets
after the sentences they support; read fetches more lines of a document around a locator."""

READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)
ADDITIVE = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False)
_FRAGMENT = re.compile(r"^L(\d+)(?:-L?(\d+))?$")

Collection = Annotated[str, Field(description="a collection name, as list_collections reports it")]
Question = Annotated[str, Field(description="the question, in natural language (at most 4000 characters)")]


class FileText(BaseModel):
    name: str = Field(description="file name with its extension (.md, .txt, .rst, .html, .py …); folders are dropped")
    text: str = Field(description="the file's text")


def build_server(tools: RagTools, *, name: str = "ragcore") -> MCPServer:
    server = MCPServer(name, instructions=INSTRUCTIONS, log_level="WARNING")
    if tools.selection is None:
        _corpus_tools(server, tools)
    _ask_tool(server, tools)
    if tools.allow_ingest:
        _ingest_tool(server, tools)
    _resources(server, tools)
    return server


async def _call(coro: Any) -> str:
    """The tool's JSON object as compact text (one text content block); a ToolProblem as a tool error."""
    try:
        return json_text(await coro)
    except ToolProblem as exc:  # the SDK answers a ToolError with isError and its text
        raise ToolError(without_paths(str(exc))) from None  # as the HTTP routes: no server path out


def _corpus_tools(server: MCPServer, tools: RagTools) -> None:
    @server.tool(annotations=READ_ONLY, structured_output=False)
    async def list_collections() -> str:
        """List the document collections this server answers from, with their document and chunk counts.
        Call it first: every other tool takes one of these names as `collection`."""
        return await _call(tools.list_collections())

    @server.tool(annotations=READ_ONLY, structured_output=False)
    async def search(collection: Collection, question: Question,
                     top_k: Annotated[int | None, Field(description="evidence kept, 1 to 1000 (default: the server's)")] = None,
                     ) -> str:
        """Search a collection for the passages that answer a question. Returns `evidence` ranked best
        first, each with an `id` to cite, a `locator`, path and lines, its `score` and `score_kind`
        (cosine, bm25, rrf or weighted; every branch's score under `scores`) and its text; then the
        passages that were `cut` and why (threshold, dedupe, per_doc, top_k, filter). Use it to
        gather evidence, then write your answer citing the ids, e.g. [ev-3f2a9b1c0d4e]."""
        return await _call(tools.search(collection, question, top_k))

    @server.tool(annotations=READ_ONLY, structured_output=False)
    async def read(collection: Collection,
                   path: Annotated[str, Field(description="a document path as search reports it, e.g. docs/intro.md")],
                   start: Annotated[int, Field(description="first line, from 1")],
                   end: Annotated[int, Field(description="last line (at most 400 lines per call)")]) -> str:
        """Read lines `start` to `end` of one document of a collection (what was ingested, nothing
        else: a path outside the collection is refused). Use it to see the context around a search
        hit. The range has its own `id` to cite and the ids of the chunks it overlaps."""
        return await _call(tools.read(collection, path, start, end))


def _ask_tool(server: MCPServer, tools: RagTools) -> None:
    scoped = " This session is scoped to a selected passage: answers come from it alone." if tools.selection else ""

    @server.tool(annotations=READ_ONLY, structured_output=False, description=(
        "Ask ragcore for a checked answer to a question from a collection. Returns `answer` (text with [n] "
        "markers), `citations` (each [n] with the evidence `id`, `locator`, lines and `support` 0-1), the "
        "`evidence`, `status` (ok, partial, abstained or error) and `confidence` when known. When status "
        "is abstained the collection does not answer the question: say so rather than guess. "
        "Cite the `id`s, not the [n] numbers, in your own text. Long: progress is reported." + scoped))
    async def ask(collection: Collection, question: Question, ctx: Context,
                  selection: Annotated[str | None, Field(description="optional: a passage's text to answer from "
                                                                     "(with the collection)")] = None) -> str:
        return await _call(tools.ask(collection, question, selection, progress=ctx.report_progress))


def _ingest_tool(server: MCPServer, tools: RagTools) -> None:
    @server.tool(annotations=ADDITIVE, structured_output=False)
    async def ingest(collection: Collection, files: Annotated[list[FileText], Field(description="the files to add")],
                     ctx: Context) -> str:
        """Add text files to a collection (created when new); documents already there stay. Returns
        each file's outcome (added, updated, unchanged, failed with a reason)."""
        uploads = [UploadedText(f.name, f.text) for f in files]
        return await _call(tools.ingest(collection, uploads, progress=ctx.report_progress))


def _resources(server: MCPServer, tools: RagTools) -> None:
    @server.resource("ragcore://collections", name="collections", mime_type="application/json",
                     description="the collections, as list_collections returns them")
    async def collections() -> str:
        return json_text(await _resource(tools.list_collections()))

    @server.resource("ragcore://{collection}", name="collection", mime_type="application/json",
                     description="a collection's documents (path, chunks, locator)")
    async def collection_documents(collection: str) -> str:
        return json_text(await _resource(tools.documents(collection)))

    @server.resource("ragcore://{collection}/{+path}#{lines}", name="document lines", mime_type="application/json",
                     description="lines of a document: ragcore://COLLECTION/PATH#L10-L20 (as read returns them)")
    async def document_lines(collection: str, path: str, lines: str) -> str:
        m = _FRAGMENT.match(lines)
        if m is None:
            raise ResourceError(f"#{lines} is not a line range like #L10-L20")
        start = int(m.group(1))
        return json_text(await _resource(tools.read(collection, path, start, int(m.group(2) or start))))

    @server.resource("ragcore://{collection}/{+path}", name="document", mime_type="application/json",
                     description="a document's first 400 lines (add #L10-L20 for a range)")
    async def document(collection: str, path: str) -> str:
        return json_text(await _resource(tools.read(collection, path, 1, MAX_READ_LINES)))


async def _resource(coro: Any) -> dict[str, Any]:
    try:
        return await coro
    except ToolProblem as exc:
        raise ResourceError(without_paths(str(exc))) from None
