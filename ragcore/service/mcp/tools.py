"""What the MCP tools do, independent of the transport: each is an async method over the engine
that runs its blocking work in the service's worker threads under the same question slots and
deadline as the HTTP API (``ragcore.service.runner``), and returns a JSON object (``outputs.py``).

Every failure is a :class:`ToolProblem` with a reason an agent can act on; an unexpected error is
logged here with its traceback and reaches the agent as its kind only (no traceback, no server path).
Cancelling the calling task (an MCP ``notifications/cancelled``) stops a question through the
engine's own cancel event (``QuestionRun.close``)."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Awaitable, Callable, Protocol

from ragcore.engine.selection import selection_problem
from ragcore.engine.stages import SelectionInput
from ragcore.service.mcp.errors import ToolProblem
from ragcore.service.mcp.lines import document_lines, line_range, path_problem
from ragcore.service.mcp.names import resolve_collection
from ragcore.service.mcp.outputs import ask_output, locator, read_output, search_output
from ragcore.service.errors import ApiError
from ragcore.service.limits import Slots
from ragcore.service.runner import run_blocking, start_question
from ragcore.settings.config import ConfigError
from ragcore.storage.schema import StoreError

log = logging.getLogger("ragcore.service.mcp")
MAX_QUESTION_CHARS = 4000  # as the HTTP API's (service/schemas.py)
ASK_STEPS = {"started": 1, "sources": 2, "message": 3, "done": 4}  # progress of one question, of 4


class Progress(Protocol):
    def __call__(self, progress: float, total: float | None = None, message: str | None = None) -> Awaitable[None]: ...


@dataclass(frozen=True)
class UploadedText:
    """A file ``ingest`` adds: its name (no folders) and its text."""

    name: str
    text: str


class RagTools:
    def __init__(self, engine: Any, slots: Slots, deadline_s: float, *, allow_ingest: bool = False,
                 selection: SelectionInput | None = None) -> None:
        self.engine, self.slots, self.deadline_s = engine, slots, deadline_s
        self.allow_ingest = allow_ingest
        self.selection = selection  # a session scoped to a passage: ask answers from it only

    # ------------------------------------------------------------------ tools

    async def list_collections(self) -> dict[str, Any]:
        infos = await self._blocking("list the collections", self.engine.collections)
        return {"collections": [{"name": i.name, "documents": i.documents, "chunks": i.chunks,
                                 "corpus_version": i.corpus_version, "built_at": i.built_at, "model": i.embedding_model}
                                for i in infos]}

    async def documents(self, collection: str) -> dict[str, Any]:
        """A collection's documents (path, chunk count) with the locator of each one's first line."""
        name = resolve_collection(collection)

        def work() -> dict[str, Any]:
            self._exists(name)
            docs = self.engine.documents(name)
            return {"collection": name, "documents": [{"path": p, "chunks": n, "locator": locator(name, p, 1, 1)}
                                                      for p, n in docs]}

        return await self._blocking("list the documents", work)

    async def search(self, collection: str, question: str, top_k: int | None = None) -> dict[str, Any]:
        name, q = resolve_collection(collection), _question(question)
        settings = self.engine.settings if top_k is None else self._with(top_k=top_k)

        def work() -> dict[str, Any]:
            self._exists(name)
            return search_output(name, self.engine.retrieve(q, settings, name))

        return await self._blocking("search", work)

    async def ask(self, collection: str, question: str, selection: str | None = None,
                  progress: Progress | None = None) -> dict[str, Any]:
        name, q = resolve_collection(collection), _question(question)
        passage = self._passage(selection)
        context = "selection" if self.selection is not None else ("both" if passage is not None else "corpus")

        def produce(cancel):
            self._exists(name)
            return self.engine.stream(q, collection=name, context=context, selection=passage, cancel=cancel)

        try:
            run = await start_question(self.slots, self.deadline_s, produce, keep=lambda ev: ev.type in ASK_STEPS)
        except ApiError as exc:
            raise ToolProblem(exc.message) from None
        done = None
        try:
            async for ev in run.events():
                if progress is not None:
                    await progress(ASK_STEPS[ev.type], len(ASK_STEPS), ev.type)
                done = ev if ev.type == "done" else done
        except Exception as exc:  # noqa: BLE001 - the engine's failure, in words
            raise _problem("answer", exc) from None
        finally:
            run.close()  # a cancelled call (the client's notifications/cancelled) stops the question here
        if done is None or done.data.get("answer") is None:
            raise ToolProblem(f"The question passed this server's deadline of {self.deadline_s:g} s before any answer was ready.")
        return ask_output(name, done.data["answer"])

    async def read(self, collection: str, path: str, start: int, end: int) -> dict[str, Any]:
        name = resolve_collection(collection)
        problem = path_problem(path)
        if problem:
            raise ToolProblem(problem)

        def work() -> dict[str, Any]:
            self._exists(name)
            chunks = self.engine.document_chunks(path, name)
            if not chunks:
                raise ToolProblem(f"{path!r} is not a document of collection {name!r}; search reports the paths it holds")
            lines = document_lines(chunks)
            return read_output(name, path, line_range(lines, start, end), max(lines), chunks)

        return await self._blocking("read", work)

    async def ingest(self, collection: str, files: list[UploadedText], progress: Progress | None = None) -> dict[str, Any]:
        if not self.allow_ingest:
            raise ToolProblem("ingest is off on this server (start it with --allow-ingest to let agents add documents)")
        name = resolve_collection(collection)
        if not files:
            raise ToolProblem("files: give at least one {name, text}")
        payload = [(f.name.replace("\\", "/").rsplit("/", 1)[-1], f.text.encode("utf-8")) for f in files]
        report = await self._blocking("ingest", lambda: self.engine.ingest_uploads(payload, name))
        if progress is not None:
            await progress(1, 1, "ingested")
        return {"collection": name, "corpus_version": report.corpus_version, "chunks_written": report.chunks_written,
                "files": [{"name": o.path, "status": o.status, "chunks": o.chunks, "reason": o.reason} for o in report.outcomes]}

    # ------------------------------------------------------------------ helpers

    async def _blocking(self, what: str, fn: Callable[[], Any]) -> Any:
        try:
            return await run_blocking(self.slots, self.deadline_s, fn)
        except ToolProblem:
            raise
        except Exception as exc:  # noqa: BLE001 - every failure becomes a reason, never a traceback
            raise _problem(what, exc) from None

    def _exists(self, name: str) -> None:
        if not self.engine.store.exists(name):
            raise ToolProblem(f"There is no collection {name!r}; list_collections lists them.")

    def _with(self, **changes: Any) -> Any:
        try:
            return self.engine.settings.with_(**changes)
        except ConfigError as exc:
            raise ToolProblem(str(exc)) from None

    def _passage(self, selection: str | None) -> SelectionInput | None:
        if self.selection is not None:  # the session's passage; a selection sent with the call cannot widen it
            return self.selection
        if selection is None:
            return None
        problem = selection_problem(selection, self.engine.settings.min_selection_chars)
        if problem:
            raise ToolProblem(problem)
        return SelectionInput(selection, "(selection)")


def _question(question: str) -> str:
    q = (question or "").strip()
    if not q:
        raise ToolProblem("question is empty: ask something about the collection")
    if len(q) > MAX_QUESTION_CHARS:
        raise ToolProblem(f"question is {len(q)} characters; at most {MAX_QUESTION_CHARS} are accepted")
    return q


def _problem(what: str, exc: BaseException) -> ToolProblem:
    if isinstance(exc, ToolProblem):
        return exc
    if isinstance(exc, ApiError):  # the service's limits: busy (429) or past the deadline (504)
        return ToolProblem(exc.message)
    if isinstance(exc, (StoreError, ConfigError)):  # messages written for users
        return ToolProblem(str(exc))
    log.error("MCP tool %s failed", what, exc_info=exc)
    return ToolProblem(f"ragcore could not {what} ({type(exc).__name__}); the server's log has the details")
