"""The lean layer (ragcore/service/lean.py) answers POST /api/retrieve and /api/ask exactly as the
FastAPI routes do: two real servers over the same collection, one built with the layer (the
default) and one without it, get the same requests, malformed ones above all, and must reply
with the same status, headers and bytes (the refusals) or the same contract (the answers)."""

from __future__ import annotations

import json

import httpx
import pytest

from ragcore.service.lean import LeanRoutes
from ragcore.settings.service import ServiceSettings
from tests.integration.service.conftest import KEY, auth, base_settings, serve_in_thread

QUESTION = "How does hybrid mode fuse the dense and sparse rankings?"
JSON = {"Content-Type": "application/json"}

# (path, body bytes, headers): what a client may send, most of it wrong
REFUSED = [
    ("/api/ask", b"{not json", JSON),
    ("/api/retrieve", b'{"question": "x",}', JSON),
    ("/api/ask", b"", JSON),
    ("/api/retrieve", b"", {}),
    ("/api/ask", json.dumps({"question": QUESTION}).encode(), {}),  # no content type: not read as JSON
    ("/api/ask", json.dumps({"question": QUESTION}).encode(), {"Content-Type": "text/plain"}),
    ("/api/retrieve", b"[1, 2]", JSON),
    ("/api/retrieve", b'"a question"', JSON),
    ("/api/retrieve", b"null", JSON),
    ("/api/ask", b'{"question": ""}', JSON),
    ("/api/ask", b'{"question": "q", "unknown_field": 1}', JSON),
    ("/api/ask", b'{"question": "q", "top_k": 0}', JSON),  # the settings' own rule: invalid_setting
    ("/api/retrieve", b'{"question": "q", "top_k": "many"}', JSON),
    # past 64 bits: json.loads keeps the integer (orjson would make it a float); the settings' ceiling refuses it
    ("/api/retrieve", json.dumps({"question": QUESTION, "top_k": 123456789012345678901234567890}).encode(), JSON),
    ("/api/retrieve", b'{"question": "q", "top_k": 1e400}', JSON),  # json.loads reads infinity
    ("/api/retrieve", b'{"question": "q", "mode": "fuzzy"}', JSON),
    ("/api/retrieve", b'{"question": "q", "threshold": NaN}', JSON),  # json.loads reads NaN; orjson does not
    ("/api/retrieve", b'{"question": "\xff\xfe"}', JSON),  # not UTF-8: FastAPI's 400
    ("/api/retrieve", b'{"question": "q", "collection": "nope"}', JSON),  # 404 from the store
    ("/api/ask", b'{"question": "What?", "selection": "too short", "context": "selection"}', JSON),
    ("/api/ask", b'{"question": "q", "history": [{"question": "a"}]}', JSON),
    ("/api/ask", b'{"question": "q", "generator": "llm"}', JSON),
    ("/api/ask", b'{"question": "' + b"q" * 4001 + b'"}', JSON),
]

ANSWERED = [
    ("/api/retrieve", json.dumps({"question": QUESTION, "top_k": 2}).encode(), JSON),
    ("/api/retrieve", json.dumps({"question": QUESTION}).encode("utf-16"), JSON),  # json.loads detects UTF-16
    ("/api/ask", json.dumps({"question": QUESTION, "generator": "extractive"}).encode(),
     {"Content-Type": "application/vnd.ragcore+json; charset=utf-8"}),
    ("/api/ask", json.dumps({"question": QUESTION, "history": [{"question": "a", "answer": "b"}]}).encode(), JSON),
]


@pytest.fixture(scope="module")
def pair(encoder, guide_data):
    from ragcore.engine.engine import Engine

    servers = []
    for lean in (True, False):
        engine = Engine(base_settings(guide_data), encoder=encoder)
        servers.append(serve_in_thread(engine, ServiceSettings(api_keys=(KEY,)), lean_routes=lean))
    yield servers
    for s in servers:
        s.stop()
        s.engine.close()


def _send(url: str, path: str, content: bytes, headers: dict[str, str], method: str = "POST") -> httpx.Response:
    return httpx.request(method, url + path, content=content, headers={**auth(), **headers}, timeout=60,
                         follow_redirects=False)


@pytest.mark.parametrize(("path", "content", "headers"), REFUSED)
def test_a_refused_request_gets_the_same_reply_with_and_without_the_lean_layer(pair, path, content, headers) -> None:
    lean, plain = (_send(s.url, path, content, headers) for s in pair)
    assert lean.status_code >= 400 and "error" in lean.json() and "Traceback" not in lean.text
    assert (lean.status_code, lean.headers.get("content-type"), lean.content) == \
        (plain.status_code, plain.headers.get("content-type"), plain.content)


@pytest.mark.parametrize(("path", "content", "headers"), ANSWERED)
def test_an_answered_request_gets_the_same_contract(pair, path, content, headers) -> None:
    lean, plain = (_send(s.url, path, content, headers) for s in pair)
    assert lean.status_code == plain.status_code == 200
    assert lean.headers["content-type"] == plain.headers["content-type"] == "application/json"
    a, b = lean.json(), plain.json()
    assert set(a) == set(b) and a.get("question", a.get("query")) == b.get("question", b.get("query")) == QUESTION
    assert [c["chunk"]["chunk_id"] for c in a["candidates"]] == [c["chunk"]["chunk_id"] for c in b["candidates"]]


def test_the_rest_of_the_app_is_unchanged(pair) -> None:
    lean, plain = pair
    for method, path in (("GET", "/api/retrieve"), ("POST", "/api/retrieve/"), ("PUT", "/api/ask")):
        a, b = (_send(s.url, path, b"", JSON, method) for s in pair)
        assert (a.status_code, a.content) == (b.status_code, b.content), (method, path)
    no_key = [httpx.post(s.url + "/api/ask", json={"question": QUESTION}) for s in pair]
    assert [r.status_code for r in no_key] == [401, 401] and no_key[0].content == no_key[1].content
    # the routes the layer serves are documented exactly as FastAPI declares them
    assert httpx.get(lean.url + "/openapi.json").json() == httpx.get(plain.url + "/openapi.json").json()
    assert any(m.cls is LeanRoutes for m in lean.server.config.app.user_middleware)
    assert not any(m.cls is LeanRoutes for m in plain.server.config.app.user_middleware)
