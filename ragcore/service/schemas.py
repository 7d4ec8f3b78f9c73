"""What a client sends: pydantic models (FastAPI validates them and lists them in the OpenAPI
schema), and how a request becomes the engine's settings and arguments. Settings sent in a request
go through the settings' own rules (``RagcoreSettings.with_``), so the service refuses exactly the
values the CLI refuses, with the same words; a selection goes through the selection rule the CLI
and the app share (``ragcore.engine.selection``)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictFloat, StrictInt, create_model, field_validator

from ragcore.engine.selection import selection_problem
from ragcore.engine.stages import SelectionInput
from ragcore.service.errors import ApiError
from ragcore.settings.catalog import Entry, request_entries
from ragcore.settings.config import LlmSettings, RagcoreSettings
from ragcore.storage.names import checked_name

MAX_QUESTION_CHARS = 4000
# A selection is read whole (cut into sentences, each embedded) before the model runs: ~1 MB held a
# question slot for 90 s (past the deadline). A passage worth selecting is far shorter; longer
# text belongs in a collection (POST /api/collections/{name}/ingest).
MAX_SELECTION_CHARS = 100_000


class Turn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    question: str = Field(max_length=MAX_QUESTION_CHARS)
    answer: str


class _Question(BaseModel):
    model_config = ConfigDict(extra="forbid")
    question: str = Field(min_length=1, max_length=MAX_QUESTION_CHARS)

    @field_validator("question")
    @classmethod
    def _has_words(cls, question: str) -> str:
        if not question.strip():  # a blank question ranked the whole collection (50 candidates)
            raise ValueError("the question is blank")
        return question


def _request_field(e: Entry) -> tuple[Any, Any]:
    """A request field for the setting ``e``: optional (``None``: the server's setting), typed by its rule
    (a choice is a Literal, so the schema lists the values), described by the catalog's words."""
    kind = e.rule.kind
    typ: Any = Literal[e.rule.choices] if kind == "choice" else {"int": StrictInt, "float": StrictFloat, "bool": StrictBool}.get(kind, str)
    return typ | None, Field(None, description=f"{e.rule.help} Default: the server's {e.variable}; {e.rule.allowed()}.")


# A question and the retrieval settings to rank the collection with: the settings a request may override are
# the settings catalog's (``request``), checked again by the settings' own rules in request_settings()
RetrieveRequest = create_model(
    "RetrieveRequest", __base__=_Question, __doc__="A question and the retrieval settings to rank the collection with.",
    **{e.rule.request: _request_field(e) for e in request_entries()})


class AskRequest(RetrieveRequest):
    """A question, answered from the collection, a selected passage, or both."""

    context: Literal["corpus", "selection", "both"] | None = Field(
        None, description="default: corpus, or both when a selection is sent")
    selection: str | None = Field(None, max_length=MAX_SELECTION_CHARS,
                                  description="the selected passage's text (never a path: the service reads no file)")
    selection_source: str | None = Field(None, max_length=500, description="a label for the passage, shown in citations")
    history: list[Turn] = Field(default_factory=list, max_length=50, description="earlier turns, oldest first")
    generator: Literal["auto", "extractive"] = Field(
        "auto", description="auto: the configured LLM if any, else extractive; extractive: never call the LLM")


def request_settings(base: RagcoreSettings, req: RetrieveRequest) -> RagcoreSettings:
    if req.collection is not None:  # the name rule before the settings see it (service/collections.py)
        checked_name(req.collection)
    changes: dict[str, Any] = {e.field: getattr(req, e.rule.request) for e in request_entries()}
    changes = {k: v for k, v in changes.items() if v is not None}
    # with_ validates every setting (~2 ms, on the event loop): only when the request changes one
    s = base.with_(**changes) if changes else base
    if isinstance(req, AskRequest) and req.generator == "extractive" and s.llm.configured:
        s = s.with_(llm=LlmSettings())
    return s


def stream_kwargs(base: RagcoreSettings, req: AskRequest) -> dict[str, Any]:
    """``Engine.stream``'s keyword arguments for ``req`` (422 for a selection the rules refuse)."""
    s = request_settings(base, req)
    context = req.context or ("both" if req.selection else "corpus")
    selection = None
    if req.selection is not None or context != "corpus":
        if context != "corpus":
            problem = selection_problem(req.selection, s.min_selection_chars)
            if problem:
                raise ApiError(422, problem, "invalid_selection")
        selection = SelectionInput(req.selection or "", req.selection_source or "(selection)")
    return {"collection": s.collection, "settings": s, "context": context, "selection": selection,
            "history": tuple((t.question, t.answer) for t in req.history)}
