"""Hostile endpoints (issue 26): replies that never end, think blocks mid-answer, a stream of
keep-alive comments, and credentials in the base URL. Against real HTTP servers on 127.0.0.1:
the project's scripted OpenAI server, and a small raw server here for what it cannot script
(an echo of the Authorization header, SSE comments only)."""

from __future__ import annotations

import base64
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable, Iterator

import pytest

from ragcore.settings.config import LlmSettings
from ragcore.synthesis.llm.errors import GenerationError
from ragcore.synthesis.llm.generator import OpenAIGenerator, reply_cap
from tests.support.openai_server import ScriptedOpenAIServer, Text

MESSAGES = [{"role": "user", "content": "Where are sessions stored?"}]
KEY = "sk-proj-Zq81LmN0pQ7rStUvWx42yZaB"


def make(url: str, **kw) -> OpenAIGenerator:
    kw.setdefault("timeout_s", 3.0)
    kw.setdefault("max_retries", 0)
    return OpenAIGenerator(LlmSettings(base_url=url, api_key=KEY, model="test-model", **kw))


class RawServer:
    """A one-handler HTTP server on 127.0.0.1; ``seen`` holds each request's headers."""

    def __init__(self, handle: Callable[[BaseHTTPRequestHandler], None]) -> None:
        seen: list[dict[str, str]] = []
        self.seen = seen

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802
                self.rfile.read(int(self.headers.get("content-length") or 0))
                seen.append({k.lower(): v for k, v in self.headers.items()})
                try:
                    handle(self)
                except OSError:  # the client went away (the deadline shut the socket)
                    pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __enter__(self) -> "RawServer":
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def _echo_auth_401(h: BaseHTTPRequestHandler) -> None:
    body = json.dumps({"error": {"message": f"bad credentials; Authorization: {h.headers.get('authorization')}",
                                 "type": "invalid_request_error", "code": "invalid_api_key"}}).encode()
    h.send_response(401)
    h.send_header("content-type", "application/json")
    h.send_header("content-length", str(len(body)))
    h.end_headers()
    h.wfile.write(body)


def _keep_alive_only(h: BaseHTTPRequestHandler) -> None:
    h.send_response(200)
    h.send_header("content-type", "text/event-stream")
    h.end_headers()
    end = time.monotonic() + 10
    while time.monotonic() < end:
        h.wfile.write(b": keep-alive\n\n")
        h.wfile.flush()
        time.sleep(0.05)


@pytest.fixture
def echo_server() -> Iterator[RawServer]:
    with RawServer(_echo_auth_401) as s:
        yield s


def test_url_credentials_are_never_sent_and_the_key_stays(echo_server: RawServer) -> None:
    url = echo_server.base_url.replace("http://", "http://user:secretpass@")
    gen = make(url)
    with pytest.raises(GenerationError) as info:
        list(gen.stream(MESSAGES))
    sent = echo_server.seen[0]["authorization"]
    assert sent == f"Bearer {KEY}"  # not "Basic <user:secretpass>" instead of the key
    msg = info.value.message
    basic = base64.b64encode(b"user:secretpass").decode()
    assert info.value.kind == "auth" and "secretpass" not in msg and basic not in msg and KEY[6:] not in msg
    assert "were not sent" in msg and "OPENAI_API_KEY" in msg


def test_an_echoed_header_of_any_scheme_is_redacted(echo_server: RawServer) -> None:
    from httpx import Client

    # a caller's own client may send another scheme; the echo must not show it either
    with Client(headers={"Authorization": "Token 9944b09199c62bcf9418ad846dd0e4bbdfc6ee4b"}) as client:
        gen = OpenAIGenerator(LlmSettings(base_url=echo_server.base_url, model="test-model", max_retries=0),
                              http_client=client)
        with pytest.raises(GenerationError) as info:
            list(gen.stream(MESSAGES))
    assert "9944b091" not in info.value.message and "Authorization: ***" in info.value.message


def test_a_reply_that_never_ends_is_cut_at_the_cap(openai_server: ScriptedOpenAIServer) -> None:
    piece = "All work and no play makes a long answer. " * 24  # ~1 KB
    openai_server.script([Text([piece] * 2000)])  # ~2 MB, far past max_output_tokens=64
    gen = make(openai_server.base_url, max_output_tokens=64)
    got: list[str] = []
    with pytest.raises(GenerationError) as info:
        for text in gen.stream(MESSAGES):
            got.append(text)
    cap = reply_cap(64)
    assert info.value.kind == "too_long" and f"{cap:,} characters" in info.value.message
    assert cap < len(info.value.partial) <= cap + len(piece) and info.value.partial == "".join(got)


def test_the_cap_counts_think_text_too(openai_server: ScriptedOpenAIServer) -> None:
    openai_server.script([Text(["<think>"] + ["hmm " * 250] * 2000 + ["</think>Done [1]."])])
    gen = make(openai_server.base_url, max_output_tokens=64)
    with pytest.raises(GenerationError) as info:
        list(gen.stream(MESSAGES))
    assert info.value.kind == "too_long" and info.value.partial == ""


def test_a_reply_within_the_cap_is_whole(openai_server: ScriptedOpenAIServer) -> None:
    text = "x" * (reply_cap(64) - 10)
    openai_server.script([Text([text[: len(text) // 2], text[len(text) // 2 :]])])
    assert "".join(make(openai_server.base_url, max_output_tokens=64).stream(MESSAGES)) == text


def test_think_blocks_anywhere_are_removed(openai_server: ScriptedOpenAIServer) -> None:
    openai_server.script([Text(["Sessions are stored in the database [1].", " <thi", "nk>Should I add more?",
                                "</think>", " They expire after two weeks [2]."])])
    out = "".join(make(openai_server.base_url).stream(MESSAGES))
    assert out == "Sessions are stored in the database [1]. They expire after two weeks [2]."


def test_keep_alive_comments_until_the_deadline_end_without_text() -> None:
    with RawServer(_keep_alive_only) as server:
        gen = make(server.base_url, deadline_s=1.0)
        t0 = time.monotonic()
        with pytest.raises(GenerationError) as info:
            list(gen.stream(MESSAGES))
    assert info.value.kind == "deadline" and info.value.partial == "" and time.monotonic() - t0 < 10  # 1 s quiet


def test_the_synthesizer_treats_a_textless_deadline_as_a_failure_to_answer() -> None:
    """The answerer keeps a deadline's partial text as the answer; with no text there is nothing
    to keep, so the failure is reported as a timeout and the extractive answer is shown."""
    from ragcore.synthesis.llm.synthesizer import _failure

    assert _failure(GenerationError("deadline", "late"), "").kind == "timeout"
    assert _failure(GenerationError("deadline", "late", partial="Half"), "Half").kind == "deadline"
    assert _failure(GenerationError("too_long", "long"), "  ").kind == "empty"


def test_a_whole_reply_is_cut_to_the_cap_too(openai_server: ScriptedOpenAIServer) -> None:
    openai_server.script([Text(["y" * 50_000])])
    text = make(openai_server.base_url, max_output_tokens=64).complete(MESSAGES)
    assert text == "y" * reply_cap(64)
