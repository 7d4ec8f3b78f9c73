"""Browsers kept out unless invited (issue 39, item 2), at the HTTP level over a real server: a
foreign ``Host`` (the DNS-rebinding shape) is refused on every route, a foreign ``Origin`` on every
state-changing request and every WebSocket handshake, with or without keys; the server's own
origin, clients that send no Origin, configured CORS origins and configured host names pass.
(tests/browser/test_cross_origin.py runs the same attacks from a real page in headless Chromium.)"""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest
import websockets
from websockets.exceptions import InvalidStatus

from tests.integration.service.conftest import KEY, auth

QUESTION = "How does hybrid mode fuse the dense and sparse rankings?"
ASK = {"question": QUESTION, "generator": "extractive"}
FOREIGN = "http://127.0.0.1:9"  # another port of the same address: another origin


@pytest.fixture(scope="module")
def open_served(start_server, guide_data):
    return start_server(guide_data)  # loopback, no keys (the default)


@pytest.fixture(scope="module")
def keyed(start_server, guide_data):
    return start_server(guide_data, api_keys=(KEY,), cors_origins=("https://notebook.example",),
                        allowed_hosts=("rag.example.org",))


def _port(served) -> str:
    return served.url.rsplit(":", 1)[1]


@pytest.mark.parametrize("host", ["evil.example", "evil.example:{port}", "127.0.0.1.nip.io:{port}", "[::2]:{port}",
                                  "localhost.evil.example", "bad host"])
def test_a_foreign_host_is_refused_on_every_route(open_served, host) -> None:
    headers = {"Host": host.format(port=_port(open_served))}
    for method, path, body in (("GET", "/api/collections", None), ("POST", "/api/ask", ASK), ("GET", "/healthz", None),
                               ("GET", "/v1/models", None)):
        r = httpx.request(method, open_served.url + path, json=body, headers=headers, timeout=60)
        assert r.status_code == 403 and "ALLOWED_HOSTS" in r.json()["error"]["message"], (host, path, r.text)


def test_the_servers_own_names_pass(open_served, keyed) -> None:
    port = _port(open_served)
    for host in (f"127.0.0.1:{port}", f"localhost:{port}", "localhost", f"[::1]:{port}"):
        assert httpx.get(open_served.url + "/api/collections", headers={"Host": host}).status_code == 200, host
    assert httpx.get(keyed.url + "/api/collections", headers={"Host": "rag.example.org", **auth()}).status_code == 200
    assert httpx.get(keyed.url + "/api/collections", headers={"Host": "other.example.org", **auth()}).status_code == 403


def test_a_foreign_origin_cannot_ask_or_upload_with_or_without_keys(open_served, keyed) -> None:
    for served, headers in ((open_served, {}), (keyed, auth())):
        asked = httpx.post(served.url + "/api/ask", json=ASK, headers={**headers, "Origin": FOREIGN}, timeout=60)
        assert asked.status_code == 403 and "CORS_ORIGINS" in asked.json()["error"]["message"]
        streamed = httpx.post(served.url + "/api/ask/stream", json=ASK, headers={**headers, "Origin": "null"}, timeout=60)
        assert streamed.status_code == 403
        chat = httpx.post(served.url + "/v1/chat/completions", headers={**headers, "Origin": FOREIGN}, timeout=60,
                          json={"model": "guide", "messages": [{"role": "user", "content": QUESTION}]})
        assert chat.status_code == 403
        up = httpx.post(served.url + "/api/collections/planted/ingest", headers={**headers, "Origin": FOREIGN},
                        files={"files": ("planted.md", b"# Planted\n\nA planted document.\n")})
        assert up.status_code == 403
        assert httpx.delete(served.url + "/api/jobs/job-1-00000000", headers={**headers, "Origin": FOREIGN}).status_code == 403
        names = [c["name"] for c in httpx.get(served.url + "/api/collections", headers=headers).json()]
        assert names == ["guide"]


def test_same_origin_no_origin_and_invited_origins_pass(open_served, keyed) -> None:
    own = httpx.post(open_served.url + "/api/ask", json=ASK, headers={"Origin": open_served.url}, timeout=60)
    assert own.status_code == 200
    assert httpx.post(open_served.url + "/api/ask", json=ASK, timeout=60).status_code == 200  # curl, SDKs
    invited = httpx.post(keyed.url + "/api/ask", json=ASK, headers={**auth(), "Origin": "https://notebook.example"}, timeout=60)
    assert invited.status_code == 200 and invited.headers["access-control-allow-origin"] == "https://notebook.example"


async def _ws_first(url: str, origin: str | None, headers: dict[str, str]) -> dict:
    async with websockets.connect(url.replace("http", "ws", 1) + "/api/ws", origin=origin,
                                  additional_headers=headers) as ws:
        await ws.send(json.dumps({"type": "rag.request", **ASK}))
        return json.loads(await asyncio.wait_for(ws.recv(), 60))


def test_a_foreign_origin_cannot_open_the_websocket(open_served, keyed) -> None:
    for served, headers in ((open_served, {}), (keyed, auth())):
        for origin in (FOREIGN, "null", "https://evil.example"):
            with pytest.raises(InvalidStatus) as refused:
                asyncio.run(_ws_first(served.url, origin, headers))
            assert refused.value.response.status_code == 403
        assert asyncio.run(_ws_first(served.url, None, headers))["type"] == "rag.started"
        assert asyncio.run(_ws_first(served.url, served.url, headers))["type"] == "rag.started"
