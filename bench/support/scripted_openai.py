"""A scripted OpenAI-protocol HTTP server on 127.0.0.1 for generator tests (no mocks).

A real ``ThreadingHTTPServer`` that speaks the wire format the ``openai`` SDK parses:

* ``GET  /v1/models``
* ``POST /v1/chat/completions``: ``stream: false`` gives a ``chat.completion`` JSON object,
  ``stream: true`` gives ``text/event-stream`` with ``data: {chat.completion.chunk}`` events
  ending in ``data: [DONE]``, sent with chunked transfer encoding like OpenAI and vLLM do.
* ``POST /v1/responses``: ``stream: false`` gives a ``response`` object,
  ``stream: true`` gives ``event: response.created`` / ``response.output_text.delta`` …
  ``response.completed`` events (``event:`` and ``data:`` lines, no ``[DONE]``).

Each test scripts the replies of the generation endpoints in order::

    server.script([HttpError(429, retry_after=1), Text(["Paris", " [1]."])])

Replies: :class:`Text` (streamed in the given pieces, optional delay per piece),
:class:`HttpError` (status, body, optional Retry-After), :class:`Hang` (sleep longer than the
client's timeout, before the headers or after some pieces), :class:`Cut` (close the socket
after N pieces without finishing the stream), :class:`Malformed` (an SSE chunk that is not
JSON), :class:`Empty` (a completion with no text), :class:`ToolCall` (the model calls a function
tool), :class:`Computed` (a reply made from the request, e.g. citing what a tool returned). With the queue empty the server answers
"OK".

Every request is recorded (:class:`Recorded`: path, headers without the Authorization
value, whether one was present, the JSON body) together with whether the client
disconnected in the middle of a streamed reply, so a test can assert that cancelling really
closed the HTTP stream.

Use :class:`ScriptedOpenAIServer` as a context manager (the test suite wraps it in the
``openai_server`` fixture; ``ragcore bench answer`` uses it as the endpoint it measures against). :func:`unused_port` gives a port nobody listens on, for connection-refused tests.
"""

from __future__ import annotations

import json
import queue
import select
import socket
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Mapping, Sequence, Union


__all__ = [
    "Text",
    "HttpError",
    "Hang",
    "Cut",
    "Malformed",
    "Empty",
    "ToolCall",
    "Computed",
    "Reply",
    "Recorded",
    "ScriptedOpenAIServer",
    "unused_port",
]


# --------------------------------------------------------------------------- replies


def _pieces(p: Sequence[str] | str) -> tuple[str, ...]:
    return (p,) if isinstance(p, str) else tuple(p)


@dataclass(frozen=True)
class Text:
    """A normal answer, streamed in ``pieces`` (one SSE chunk each) with ``delay`` between them."""

    pieces: Sequence[str] | str
    delay: float = 0.0
    finish_reason: str = "stop"


@dataclass(frozen=True)
class HttpError:
    """An HTTP error status with an OpenAI-style JSON error body (or ``body`` verbatim)."""

    status: int
    message: str = "scripted error"
    type: str = "server_error"
    code: str | None = None
    retry_after: float | str | None = None
    body: Any = None  # dict → JSON, str → sent as is; None → {"error": {...}} from the fields
    headers: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Hang:
    """Send ``pieces`` (streaming only), then stall for ``seconds`` without closing."""

    seconds: float = 5.0
    pieces: Sequence[str] | str = ()


@dataclass(frozen=True)
class Cut:
    """Stream the first ``after`` of ``pieces``, then close the socket mid-body."""

    pieces: Sequence[str] | str
    after: int
    delay: float = 0.0


@dataclass(frozen=True)
class Malformed:
    """Stream ``pieces``, then a ``data:`` line that is not JSON (non-stream: a broken body)."""

    pieces: Sequence[str] | str = ()
    raw: str = '{"id": "chatcmpl-broken", "choices": [{"index": 0, "delta": {"content": "oo'


@dataclass(frozen=True)
class Empty:
    """A completion that finishes with no text at all."""

    finish_reason: str = "stop"


@dataclass(frozen=True)
class ToolCall:
    """The model calls a function tool: a chat completion whose message has ``tool_calls`` and no
    text (``finish_reason: tool_calls``). Chat completions, not streamed, only (an agent's
    ``Runner.run``); elsewhere the server answers 501."""

    name: str
    arguments: Mapping[str, Any]
    call_id: str = "call_scripted_1"


@dataclass(frozen=True)
class Computed:
    """A reply made from the request's JSON body when it arrives (e.g. a final answer that cites what
    a tool returned: the tool's output is in the request's messages)."""

    make: Any  # Callable[[dict], Reply]


Reply = Union[Text, HttpError, Hang, Cut, Malformed, Empty, ToolCall, Computed]


@dataclass
class Recorded:
    method: str
    path: str
    headers: dict[str, str]  # lower-case names; no Authorization
    has_auth: bool
    body: Any
    at: float  # time.monotonic() when the request arrived
    reply: str = ""  # class name of the scripted reply used
    finished_at: float | None = None  # when the server finished writing the reply
    disconnected_at: float | None = None  # when the client was seen to go away mid-reply
    disconnected: threading.Event = field(default_factory=threading.Event, repr=False)

    @property
    def stream(self) -> bool:
        return isinstance(self.body, dict) and bool(self.body.get("stream"))


class _ClientGone(Exception):
    pass


# --------------------------------------------------------------------------- wire format


def _chat_chunk(cid: str, model: str, created: int, delta: dict, finish: str | None) -> dict:
    return {
        "id": cid,
        "object": "chat.completion.chunk",
        "created": created,
        "model": model,
        "system_fingerprint": "fp_scripted",
        "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
    }


def _chat_completion(cid: str, model: str, created: int, text: str, finish: str) -> dict:
    return {
        "id": cid,
        "object": "chat.completion",
        "created": created,
        "model": model,
        "system_fingerprint": "fp_scripted",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text, "refusal": None},
                "logprobs": None,
                "finish_reason": finish,
            }
        ],
        "usage": {"prompt_tokens": 10, "completion_tokens": max(1, len(text.split())), "total_tokens": 10 + max(1, len(text.split()))},
    }


def _message_item(mid: str, text: str | None, status: str) -> dict:
    content = [] if text is None else [{"type": "output_text", "text": text, "annotations": [], "logprobs": []}]
    return {"id": mid, "type": "message", "status": status, "role": "assistant", "content": content}


def _response_obj(rid: str, model: str, created: int, status: str, output: list, body: dict) -> dict:
    return {
        "id": rid,
        "object": "response",
        "created_at": created,
        "status": status,
        "error": None,
        "incomplete_details": None if status != "incomplete" else {"reason": "max_output_tokens"},
        "instructions": body.get("instructions"),
        "max_output_tokens": body.get("max_output_tokens"),
        "model": model,
        "output": output,
        "parallel_tool_calls": True,
        "previous_response_id": None,
        "reasoning": {"effort": None, "summary": None},
        "store": body.get("store", True),
        "temperature": body.get("temperature", 1.0),
        "text": {"format": {"type": "text"}},
        "tool_choice": "auto",
        "tools": [],
        "top_p": 1.0,
        "truncation": "disabled",
        "usage": None
        if status == "in_progress"
        else {
            "input_tokens": 10,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 5,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 15,
        },
        "user": None,
        "metadata": {},
    }


# --------------------------------------------------------------------------- server


class ScriptedOpenAIServer:
    """The server; ``base_url`` ends in ``/v1`` like OpenAI's."""

    def __init__(self, *, model: str = "test-model", models: Sequence[str] | None = None) -> None:
        self.model = model
        self.models: list[str] = list(models) if models is not None else [model]
        self.requests: list[Recorded] = []
        self._replies: "queue.Queue[Reply]" = queue.Queue()
        self._models_replies: "queue.Queue[Reply]" = queue.Queue()
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._httpd: _QuietServer | None = None
        self._thread: threading.Thread | None = None

    # -- scripting
    def script(self, replies: Sequence[Reply]) -> "ScriptedOpenAIServer":
        """Queue replies for the generation endpoints (chat and responses), in order."""
        for r in replies:
            self._replies.put(r)
        return self

    def script_models(self, replies: Sequence[Reply]) -> "ScriptedOpenAIServer":
        """Queue replies for ``GET /v1/models`` (only HttpError and Hang make sense)."""
        for r in replies:
            self._models_replies.put(r)
        return self

    @property
    def pending(self) -> int:
        return self._replies.qsize()

    # -- lifecycle
    @property
    def port(self) -> int:
        assert self._httpd is not None, "server not started"
        return self._httpd.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> "ScriptedOpenAIServer":
        handler = type("Handler", (_Handler,), {"server_state": self})
        httpd = _QuietServer(("127.0.0.1", 0), handler)
        self._httpd = httpd
        self._thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> "ScriptedOpenAIServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- inspection
    def generation_requests(self) -> list[Recorded]:
        return [r for r in self.requests if r.method == "POST"]

    def wait_for_requests(self, n: int, timeout: float = 5.0) -> list[Recorded]:
        deadline = time.monotonic() + timeout
        while len(self.requests) < n and time.monotonic() < deadline:
            time.sleep(0.01)
        return list(self.requests)

    # -- internals used by the handler
    def _record(self, rec: Recorded) -> None:
        with self._lock:
            self.requests.append(rec)

    def _next(self, models: bool) -> Reply | None:
        q = self._models_replies if models else self._replies
        try:
            return q.get_nowait()
        except queue.Empty:
            return None


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        import sys

        exc = sys.exc_info()[1]
        if isinstance(exc, (ConnectionError, TimeoutError)):
            return  # a client that went away (the tests make them do that)
        super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_state: ScriptedOpenAIServer  # set on the subclass made in start()

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    # -- plumbing
    def _read_body(self) -> Any:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if not raw:
            return None
        try:
            return json.loads(raw)
        except ValueError:
            return raw.decode("utf-8", "replace")

    def _record(self, body: Any) -> Recorded:
        headers = {k.lower(): v for k, v in self.headers.items() if k.lower() != "authorization"}
        rec = Recorded(
            method=self.command,
            path=self.path,
            headers=headers,
            has_auth="authorization" in {k.lower() for k in self.headers.keys()},
            body=body,
            at=time.monotonic(),
        )
        self.server_state._record(rec)
        return rec

    def _send_json(self, status: int, obj: Any, headers: Mapping[str, str] | None = None) -> None:
        data = obj.encode() if isinstance(obj, str) else json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def _client_gone(self, wait: float) -> bool:
        """Wait up to ``wait`` s; True as soon as the client closes its end of the socket."""
        sock = self.connection
        deadline = time.monotonic() + wait
        while True:
            remaining = deadline - time.monotonic()
            try:
                r, _, _ = select.select([sock], [], [], max(0.0, min(remaining, 0.05)))
                if r:
                    data = sock.recv(1, socket.MSG_PEEK)
                    if data == b"":
                        return True
            except (ConnectionError, OSError):
                return True
            if remaining <= 0 or self.server_state._stopping.is_set():
                return False

    def _pause(self, rec: Recorded, seconds: float) -> None:
        if seconds > 0 and self._client_gone(seconds):
            raise _ClientGone
        if self._client_gone(0):
            raise _ClientGone

    def _start_sse(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

    def _chunk(self, data: bytes) -> None:
        try:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError) as err:
            raise _ClientGone from err

    def _event(self, obj: Any, event: str | None = None) -> None:
        data = obj if isinstance(obj, str) else json.dumps(obj)
        prefix = f"event: {event}\n" if event else ""
        self._chunk(f"{prefix}data: {data}\n\n".encode())

    def _end_chunks(self) -> None:
        self._chunk(b"")  # the zero-length chunk ends the body

    def _cut(self) -> None:
        """Close the connection in the middle of the body (no terminating chunk)."""
        self.close_connection = True
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    # -- routes
    def do_GET(self) -> None:  # noqa: N802
        rec = self._record(None)
        path = self.path.split("?")[0].rstrip("/")
        if path != "/v1/models":
            self._send_json(404, {"error": {"message": f"Unknown path {path}", "type": "invalid_request_error", "code": None}})
            return
        reply = self.server_state._next(models=True)
        rec.reply = type(reply).__name__ if reply else "models"
        if isinstance(reply, HttpError):
            self._send_error(reply)
        elif isinstance(reply, Hang):
            self._client_gone(reply.seconds)
            self.close_connection = True
        else:
            data = [{"id": m, "object": "model", "created": 1700000000, "owned_by": "scripted"} for m in self.server_state.models]
            self._send_json(200, {"object": "list", "data": data})
        rec.finished_at = time.monotonic()

    def do_POST(self) -> None:  # noqa: N802
        body = self._read_body()
        rec = self._record(body)
        path = self.path.split("?")[0].rstrip("/")
        if path not in ("/v1/chat/completions", "/v1/responses"):
            self._send_json(404, {"error": {"message": f"Unknown path {path}", "type": "invalid_request_error", "code": None}})
            return
        reply = self.server_state._next(models=False) or Text("OK")
        if isinstance(reply, Computed):
            reply = reply.make(body)
        rec.reply = type(reply).__name__
        stream = isinstance(body, dict) and bool(body.get("stream"))
        api = "chat" if path.endswith("chat/completions") else "responses"
        model = body.get("model", self.server_state.model) if isinstance(body, dict) else self.server_state.model
        try:
            if isinstance(reply, HttpError):
                self._send_error(reply)
            elif isinstance(reply, ToolCall):
                self._tool_call(reply, api, stream, model)
            elif stream:
                getattr(self, f"_stream_{api}")(rec, reply, model, body)
            else:
                self._plain(rec, reply, api, model, body)
        except _ClientGone:
            rec.disconnected_at = time.monotonic()
            rec.disconnected.set()
            self.close_connection = True
        except (BrokenPipeError, ConnectionResetError):
            rec.disconnected_at = time.monotonic()
            rec.disconnected.set()
            self.close_connection = True
        finally:
            rec.finished_at = time.monotonic()

    def _send_error(self, r: HttpError) -> None:
        if r.body is None:
            body: Any = {"error": {"message": r.message, "type": r.type, "param": None, "code": r.code}}
        else:
            body = r.body
        headers = dict(r.headers)
        if r.retry_after is not None:
            headers["Retry-After"] = str(r.retry_after)
        self._send_json(r.status, body, headers)

    def _tool_call(self, reply: ToolCall, api: str, stream: bool, model: str) -> None:
        if api != "chat" or stream:
            self._send_json(501, {"error": {"message": "scripted tool calls: chat completions, not streamed, only",
                                            "type": "server_error", "code": None}})
            return
        call = {"id": reply.call_id, "type": "function",
                "function": {"name": reply.name, "arguments": json.dumps(dict(reply.arguments))}}
        body = _chat_completion("chatcmpl-scripted", model, int(time.time()), "", "tool_calls")
        body["choices"][0]["message"].update(content=None, tool_calls=[call])
        self._send_json(200, body)

    # -- non-streaming
    def _plain(self, rec: Recorded, reply: Reply, api: str, model: str, body: dict) -> None:
        created = int(time.time())
        if isinstance(reply, Hang):
            self._pause(rec, reply.seconds)
            self.close_connection = True
            return
        if isinstance(reply, Cut):
            text = "".join(_pieces(reply.pieces))
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", "4096")
            self.end_headers()
            self.wfile.write(json.dumps({"partial": text})[:20].encode())
            self._cut()
            return
        if isinstance(reply, Malformed):
            self._send_json(200, '{"id": "chatcmpl-broken", "object": "chat.completion", "choices": [')
            return
        if isinstance(reply, Empty):
            text, finish = "", reply.finish_reason
        else:
            assert isinstance(reply, Text)
            text, finish = "".join(_pieces(reply.pieces)), reply.finish_reason
        if api == "chat":
            self._send_json(200, _chat_completion("chatcmpl-scripted", model, created, text, finish))
        else:
            output = [] if not text else [_message_item("msg_scripted", text, "completed")]
            status = "completed" if finish == "stop" else "incomplete"
            self._send_json(200, _response_obj("resp_scripted", model, created, status, output, body))

    # -- streaming: chat completions
    def _stream_chat(self, rec: Recorded, reply: Reply, model: str, body: dict) -> None:
        cid, created = "chatcmpl-scripted", int(time.time())
        if isinstance(reply, Hang) and not _pieces(reply.pieces):
            self._pause(rec, reply.seconds)  # stall before the headers
            self.close_connection = True
            return
        self._start_sse()
        self._event(_chat_chunk(cid, model, created, {"role": "assistant", "content": ""}, None))
        delay = getattr(reply, "delay", 0.0)
        pieces = _pieces(getattr(reply, "pieces", ()))
        if isinstance(reply, Cut):
            pieces = pieces[: reply.after]
        for i, piece in enumerate(pieces):
            if i:
                self._pause(rec, delay)
            self._event(_chat_chunk(cid, model, created, {"content": piece}, None))
        if isinstance(reply, Cut):
            self._pause(rec, delay)
            self._cut()
            return
        if isinstance(reply, Hang):
            self._pause(rec, reply.seconds)
            self._cut()
            return
        if isinstance(reply, Malformed):
            self._event(reply.raw)
            self._event("[DONE]")
            self._end_chunks()
            return
        finish = reply.finish_reason if isinstance(reply, (Text, Empty)) else "stop"
        self._pause(rec, delay)
        self._event(_chat_chunk(cid, model, created, {}, finish))
        self._event("[DONE]")
        self._end_chunks()

    # -- streaming: responses
    def _stream_responses(self, rec: Recorded, reply: Reply, model: str, body: dict) -> None:
        rid, mid, created = "resp_scripted", "msg_scripted", int(time.time())
        if isinstance(reply, Hang) and not _pieces(reply.pieces):
            self._pause(rec, reply.seconds)
            self.close_connection = True
            return
        seq = iter(range(10_000))

        def ev(kind: str, **fields: Any) -> None:
            self._event({"type": kind, "sequence_number": next(seq), **fields}, event=kind)

        self._start_sse()
        ev("response.created", response=_response_obj(rid, model, created, "in_progress", [], body))
        ev("response.in_progress", response=_response_obj(rid, model, created, "in_progress", [], body))
        delay = getattr(reply, "delay", 0.0)
        pieces = _pieces(getattr(reply, "pieces", ()))
        if isinstance(reply, Cut):
            pieces = pieces[: reply.after]
        if pieces or isinstance(reply, Text):
            ev("response.output_item.added", output_index=0, item=_message_item(mid, None, "in_progress"))
            ev(
                "response.content_part.added",
                item_id=mid,
                output_index=0,
                content_index=0,
                part={"type": "output_text", "text": "", "annotations": [], "logprobs": []},
            )
        for i, piece in enumerate(pieces):
            if i:
                self._pause(rec, delay)
            ev("response.output_text.delta", item_id=mid, output_index=0, content_index=0, delta=piece, logprobs=[])
        if isinstance(reply, Cut):
            self._pause(rec, delay)
            self._cut()
            return
        if isinstance(reply, Hang):
            self._pause(rec, reply.seconds)
            self._cut()
            return
        if isinstance(reply, Malformed):
            self._chunk(f"event: response.output_text.delta\ndata: {reply.raw}\n\n".encode())
            self._end_chunks()
            return
        self._pause(rec, delay)
        text = "".join(pieces)
        output: list = []
        if pieces or isinstance(reply, Text):
            ev("response.output_text.done", item_id=mid, output_index=0, content_index=0, text=text, logprobs=[])
            part = {"type": "output_text", "text": text, "annotations": [], "logprobs": []}
            ev("response.content_part.done", item_id=mid, output_index=0, content_index=0, part=part)
            item = _message_item(mid, text, "completed")
            ev("response.output_item.done", output_index=0, item=item)
            output = [item]
        finish = reply.finish_reason if isinstance(reply, (Text, Empty)) else "stop"
        if finish == "stop":
            ev("response.completed", response=_response_obj(rid, model, created, "completed", output, body))
        else:
            ev("response.incomplete", response=_response_obj(rid, model, created, "incomplete", output, body))
        self._end_chunks()


# --------------------------------------------------------------------------- helpers


def unused_port() -> int:
    """A localhost port nobody listens on (bound, read, closed)."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port
