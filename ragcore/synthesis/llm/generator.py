"""Generation with any OpenAI-compatible endpoint: OpenAI itself, vLLM, llama.cpp, Ollama ...

:class:`OpenAIGenerator` streams an answer through the Chat Completions API
(``settings.api == "chat"``) or the Responses API (``"responses"``) with the official
``openai`` SDK. The parts:

* the SDK retries failed requests (connection errors, timeouts, 408/409/429/5xx) up to
  ``max_retries`` times, with its own backoff, honouring ``Retry-After``;
* :mod:`.openai_request` builds the request and adapts to a model that rejects
  ``max_tokens`` or ``temperature``;
* :mod:`.openai_stream` turns events into text (and drops a ``<think>`` block);
* :mod:`.openai_errors` turns every failure into a :class:`GenerationError` that says what to do;
* :mod:`.openai_budget` stops the answer when the caller cancels or ``deadline_s`` passes;
* a reply is read up to :func:`reply_cap` characters (from ``max_output_tokens``), then cut
  (``kind="too_long"``, the text so far in ``partial``): a server that ignores the requested
  budget cannot fill memory.

Nothing is retried once text has reached the caller: a stream that breaks then ends as
``kind="stream_cut"`` with the text so far in ``partial``. Closing the generator returned by
:meth:`OpenAIGenerator.stream` closes the HTTP response at once. Neither the API key (nor a
part of it) nor the base URL's ``user:password@`` appears in a message, a log line, the repr
or :attr:`~OpenAIGenerator.display_url`; the ``user:password@`` is not sent either (the key
authenticates, as ``Authorization: Bearer``).
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING, Any, Iterator
from urllib.parse import unquote, urlsplit

from ragcore.settings.config import LlmSettings
from ragcore.settings.redact import redact_text, redact_url, url_secrets
from ragcore.synthesis.llm import sdk_errors as errors
from ragcore.synthesis.llm.errors import GenerationError
from ragcore.synthesis.llm.budget import Budget, Watchdog, call_until, refuse_abandoned, remember_response
from ragcore.synthesis.llm.request import RequestShape, create
from ragcore.synthesis.llm.stream import EndedEarly, StreamReader, full_text

if TYPE_CHECKING:
    import httpx

log = logging.getLogger(__name__)

DEFAULT_BASE_URL = "https://api.openai.com/v1"
CHECK_TIMEOUT_CAP_S = 10.0
# max_output_tokens is only a request: a server that ignores it could stream without end (20 MB
# took 78 s and ~2 GB). The client stops reading at this many characters per requested token, far
# above what a token holds (about 4 characters of English, rarely 16), think blocks included.
CHARS_PER_TOKEN_CAP = 16
MIN_REPLY_CAP_CHARS = 4096


def reply_cap(max_output_tokens: int) -> int:
    """The most characters the client reads of one reply (see CHARS_PER_TOKEN_CAP)."""
    return max(MIN_REPLY_CAP_CHARS, max_output_tokens * CHARS_PER_TOKEN_CAP)


class OpenAIGenerator:
    """Answers with an OpenAI-compatible endpoint; see the module docstring.

    ``http_client`` (an ``httpx.Client`` of the caller's) replaces the one made here; the
    caller then owns its auth, and an abandoned call can no longer be kept from retrying.
    """

    def __init__(self, llm: LlmSettings, *, http_client: "httpx.Client | None" = None) -> None:
        self.settings = llm
        self._http_client = http_client
        self._client: Any = None
        self._lock = threading.Lock()
        self._shape = RequestShape()
        raw_url = (llm.base_url or DEFAULT_BASE_URL).rstrip("/")
        secrets = tuple(s for s in (llm.api_key, *url_secrets(raw_url)) if s)
        # user:password@ in the URL is never sent: httpx would turn it into "Authorization: Basic …",
        # replacing the Bearer key, and a server echoing that header would show the password
        self._request_url = redact_url(raw_url) or DEFAULT_BASE_URL
        #: what is shown: no user:password@, and no key (e.g. an Azure-style ?api-key=...)
        self.base_url: str = redact_text(self._request_url, secrets)
        self._ctx = errors.ErrorContext(
            url=self.base_url,
            model=llm.model or "",
            api=llm.api,
            has_key=bool(llm.api_key),
            timeout_s=llm.timeout_s,
            deadline_s=llm.deadline_s,
            max_output_tokens=llm.max_output_tokens,
            secrets=secrets,
            url_credentials=_url_auth(raw_url) is not None,
        )

    # -- identity
    @property
    def name(self) -> str:
        api = "responses" if self.settings.api == "responses" else "chat"
        return f"openai-{api}:{self.settings.model or '(no model)'}"

    @property
    def display_url(self) -> str:
        return self.base_url

    def __repr__(self) -> str:
        key = "set" if self.settings.api_key else "unset"
        return f"OpenAIGenerator(name={self.name!r}, base_url={self.display_url!r}, api_key={key})"

    # -- client
    def load(self) -> None:
        """Import the SDK and build the client now (seconds on a busy machine), so that a caller's own
        timeout (the rerank's) is spent on the request, not on the import."""
        self._get_client()

    def _get_client(self) -> Any:
        with self._lock:
            if self._client is None:
                import openai

                self._client = openai.OpenAI(
                    base_url=self._request_url,
                    api_key=self.settings.api_key or "not-needed",
                    timeout=self.settings.timeout_s,
                    max_retries=max(0, self.settings.max_retries),
                    http_client=self._http_client or self._own_http_client(),
                )
            return self._client

    def _own_http_client(self) -> Any:
        """The SDK's default client, plus: no retry of a quota 429, and the hooks of :mod:`.openai_budget`."""
        import openai

        hooks = {"request": [refuse_abandoned], "response": [remember_response, _no_retry_on_quota]}
        return openai.DefaultHttpxClient(event_hooks=hooks)

    def close(self) -> None:
        """Release the connection pool (not a caller's own ``http_client``)."""
        with self._lock:
            client, self._client = self._client, None
        if client is not None and self._http_client is None:
            client.close()

    def __enter__(self) -> "OpenAIGenerator":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- requests
    def _open(self, client: Any, messages: list[dict], budget: Budget, *, stream: bool, max_tokens: int | None = None) -> Any:
        """The SDK's reply (a stream, or a whole completion), adapting to rejected parameters."""
        import openai

        while True:
            try:
                return call_until(
                    lambda: create(client, self.settings, self._shape, messages, stream=stream, max_tokens=max_tokens),
                    budget,
                )
            except openai.BadRequestError as exc:
                detail, code = errors.server_detail(exc)
                if exc.status_code != 400 or not self._shape.adapt(self.settings.api, f"{detail} {code or ''}"):
                    raise

    def _failure(self, exc: BaseException, partial: str, budget: Budget) -> GenerationError:
        """The error to raise for ``exc``, given the text that already reached the caller."""
        reason = budget.reason()  # a stop the caller or the deadline asked for explains the rest
        if isinstance(exc, GenerationError):  # decided here already (the reply cap)
            err = exc
        elif reason == "cancelled":
            err = errors.cancelled(partial)
        elif reason == "deadline":
            err = errors.deadline(partial, self._ctx)
        elif partial:
            err = errors.cut(exc, partial, self._ctx)
        else:
            err = errors.classify(exc, self._ctx)
        if err.kind != "cancelled":
            log.warning("LLM call failed (%s): %s", err.kind, err.message)
        return err

    # -- public API
    def stream(self, messages: list[dict], cancel: threading.Event | None = None) -> Iterator[str]:
        """Yield text deltas of the answer. Raises :class:`GenerationError`.

        Close the generator to stop: the HTTP response is closed at once. ``cancel`` stops it
        from another thread; ``settings.deadline_s`` bounds the whole answer.
        """
        if not self.settings.model:
            raise errors.no_model()
        client = self._get_client()  # importing the SDK is not part of the answer's time
        budget = Budget(self.settings.deadline_s, cancel)
        sent: list[str] = []
        reader = StreamReader(self.settings.api)
        cap = reply_cap(self.settings.max_output_tokens)
        try:
            sdk_stream = self._open(client, messages, budget, stream=True)
            with sdk_stream, Watchdog(sdk_stream.response, budget):
                for event in sdk_stream:
                    text = reader.feed(event)
                    if text:
                        sent.append(text)
                        yield text
                    budget.check()
                    if reader.received > cap:  # leaving the with-block closes the response
                        raise errors.too_long("".join(sent), cap, self._ctx)
                tail = reader.flush()
                if tail:
                    sent.append(tail)
                    yield tail
            if not reader.finished:
                budget.check()  # the watchdog's shutdown may look like an early end
                raise EndedEarly()
        except Exception as exc:  # noqa: BLE001 - classified; a bug is re-raised by classify
            raise self._failure(exc, "".join(sent), budget) from None
        if not "".join(sent).strip():
            raise errors.empty(reader.finish_reason, self._ctx)

    def complete(self, messages: list[dict], *, cancel: threading.Event | None = None) -> str:
        """The whole answer in one non-streaming request. Raises :class:`GenerationError`."""
        if not self.settings.model:
            raise errors.no_model()
        client = self._get_client()
        budget = Budget(self.settings.deadline_s, cancel)
        try:
            text, finish = full_text(self._open(client, messages, budget, stream=False), self.settings.api)
        except Exception as exc:  # noqa: BLE001 - classified; a bug is re-raised by classify
            raise self._failure(exc, "", budget) from None
        cap = reply_cap(self.settings.max_output_tokens)
        if len(text) > cap:  # the SDK has read the body already: only what is kept can be bounded
            log.warning("LLM reply cut at %d characters (max_output_tokens=%d)", cap, self.settings.max_output_tokens)
            text = text[:cap]
        if not text.strip():
            raise errors.empty(finish, self._ctx)
        return text

    def check_connection(self) -> tuple[bool, str]:
        """Is the endpoint reachable, is the key accepted, is the model served?

        Lists the models; when the list does not name the model (or the server has no
        model list) it asks for a few tokens instead. One attempt, no retries.
        """
        if not self.settings.model:
            return False, (
                "No LLM is configured: set RAGCORE_LLM_MODEL (and OPENAI_BASE_URL for a local server). "
                "The extractive composer answers without one."
            )
        timeout = min(self.settings.timeout_s, CHECK_TIMEOUT_CAP_S)
        client = self._get_client().with_options(timeout=timeout, max_retries=0)
        listed, problem = self._list_models(client)
        if problem:
            return False, problem
        url, model = self.display_url, self.settings.model
        if listed is not None and model in listed:
            return True, f"Connected to {url}; model '{model}' is available ({len(listed)} model(s) listed)."
        try:
            probe = self._probe(client, timeout)
        except GenerationError as err:
            if listed:
                names = ", ".join(listed[:5]) + (" …" if len(listed) > 5 else "")
                return False, f"{err.message} The server lists: {names}."
            return False, err.message
        if listed is None:
            return True, f"Connected to {url}; model '{model}' answered ({probe}; the server has no model list)."
        return True, f"Connected to {url}; model '{model}' answered ({probe}), though the server does not list it."

    def _list_models(self, client: Any) -> tuple[list[str] | None, str | None]:
        """The served model ids (None: the server has no list) or a problem to report."""
        import openai

        try:
            page = client.models.list()
        except openai.APIStatusError as exc:
            if exc.status_code in (404, 405, 501):
                return None, None
            return None, errors.classify(exc, self._ctx).message
        except Exception as exc:  # noqa: BLE001
            try:
                return None, errors.classify(exc, self._ctx).message
            except Exception:  # noqa: BLE001 - not an endpoint failure: still no traceback here
                return None, f"Could not check the LLM endpoint at {self.display_url} ({type(exc).__name__})."
        return [str(getattr(m, "id", "")) for m in getattr(page, "data", []) or []], None

    def _probe(self, client: Any, timeout: float) -> str:
        messages = [{"role": "user", "content": "Reply with the word OK."}]
        budget = Budget(timeout * 3)  # room for the two parameter adaptations
        try:
            reply = self._open(client, messages, budget, stream=False, max_tokens=16)
            text, _ = full_text(reply, self.settings.api)
        except Exception as exc:  # noqa: BLE001
            raise self._failure(exc, "", budget) from None
        return "a test completion worked" if text.strip() else "a test completion came back empty"


def _url_auth(url: str) -> tuple[str, str] | None:
    """(user, password) from ``http://user:password@host/...``, or None (only to say they were dropped)."""
    try:
        parts = urlsplit(url)
        user, password = parts.username, parts.password
    except ValueError:
        return None
    if user is None and password is None:
        return None
    return unquote(user or ""), unquote(password or "")


def _no_retry_on_quota(response: Any) -> None:
    """httpx response hook: a 429 for an exhausted quota will not pass by waiting, so tell
    the SDK not to retry it (through the ``x-should-retry`` header it obeys)."""
    if response.status_code != 429 or "x-should-retry" in response.headers:
        return
    try:
        response.read()
        if errors.is_quota(response.text):
            response.headers["x-should-retry"] = "false"
    except Exception:  # noqa: BLE001 - an unreadable body: leave the decision to the SDK
        pass
