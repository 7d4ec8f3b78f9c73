"""A page on another origin cannot use `ragcore serve` (issue 39, item 2), in headless Chromium.

A real server (no keys, and with keys) on 127.0.0.1 and an attacker's page served from another
port of 127.0.0.1 (another origin). The page tries what a malicious site would: read an answer
with fetch (JSON, and a no-preflight text/plain POST), read the collection list, ask over the
WebSocket, and add a document with a cross-origin multipart POST (which needs no preflight). It
reads nothing and writes nothing: no collection appears on the server. The same script run from
the server's own origin does read answers (the control that shows the attacks would work).
"""

from __future__ import annotations

import json
import shutil
import threading
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest

from ragcore.engine.engine import Engine
from ragcore.settings.config import RagcoreSettings
from ragcore.settings.service import ServiceSettings
from tests.conftest import DOCS
from tests.integration.service.conftest import KEY, serve_in_thread

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
QUESTION = "How does hybrid mode fuse the dense and sparse rankings?"

pytestmark = pytest.mark.browser

# Every attack, each reporting what it got: "read: …" when the page could read a reply.
ATTACKS_JS = """
async ([base, key]) => {
  const out = {};
  const ask = JSON.stringify({question: %s, generator: "extractive"});
  const auth = key ? {"Authorization": "Bearer " + key} : {};
  const attempt = async (name, f) => {
    try { out[name] = "read: " + (await f()).slice(0, 80); } catch (e) { out[name] = "blocked: " + e; }
  };
  await attempt("fetch_ask_json", async () => (await fetch(base + "/api/ask", {method: "POST",
      headers: {"Content-Type": "application/json", ...auth}, body: ask})).text());
  await attempt("fetch_ask_plain", async () => (await fetch(base + "/api/ask", {method: "POST",
      headers: {"Content-Type": "text/plain"}, body: ask})).text());
  await attempt("fetch_collections", async () => (await fetch(base + "/api/collections", {headers: auth})).text());
  await attempt("websocket", () => new Promise((resolve, reject) => {
    const ws = new WebSocket(base.replace("http", "ws") + "/api/ws");
    ws.onopen = () => ws.send(JSON.stringify({type: "rag.request", question: %s, generator: "extractive"}));
    ws.onmessage = (m) => { ws.close(); resolve(String(m.data)); };
    ws.onerror = () => reject(new Error("websocket error"));
    ws.onclose = (e) => reject(new Error("closed " + e.code));
  }));
  const form = new FormData();
  form.append("files", new Blob(["# Planted\\n\\nThe planted sentence.\\n"], {type: "text/markdown"}), "planted.md");
  await attempt("upload_no_cors", async () => {
    const r = await fetch(base + "/api/collections/planted/ingest", {method: "POST", mode: "no-cors", body: form});
    return "opaque " + r.type;
  });
  return out;
}
""" % (json.dumps(QUESTION), json.dumps(QUESTION))


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory, encoder) -> Path:
    src = tmp_path_factory.mktemp("xo-corpus")
    shutil.copy(DOCS / "04-retrieval-modes-and-fusion.md", src)
    folder = tmp_path_factory.mktemp("xo-data")
    engine = Engine(RagcoreSettings(data_dir=folder, collection="guide", calibrated_bar=False), encoder=encoder)
    engine.ingest([src], "guide")
    engine.close()
    return folder


@pytest.fixture(scope="module", params=["no keys", "keys"])
def served(request, data, encoder, tmp_path_factory: pytest.TempPathFactory):
    keys = (KEY,) if request.param == "keys" else ()
    own = tmp_path_factory.mktemp("xo-served") / "data"  # each server its own copy: the control uploads
    shutil.copytree(data, own)
    engine = Engine(RagcoreSettings(data_dir=own, collection="guide", calibrated_bar=False), encoder=encoder)
    s = serve_in_thread(engine, ServiceSettings(api_keys=keys))
    yield s, (KEY if keys else None)
    s.stop()
    engine.close()


@pytest.fixture(scope="module")
def attacker(tmp_path_factory: pytest.TempPathFactory):
    """An ordinary web page on another origin (another port of 127.0.0.1)."""
    site = tmp_path_factory.mktemp("attacker-site")
    (site / "index.html").write_text("<!doctype html><title>a page</title><p>nothing to see</p>")
    quiet = type("Quiet", (SimpleHTTPRequestHandler,), {"log_message": lambda *a: None})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), partial(quiet, directory=str(site)))
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/index.html"
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture(scope="module")
def page():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield browser.new_page()
        browser.close()


def test_a_page_on_another_origin_can_neither_read_nor_write(served, attacker, page) -> None:
    server, key = served
    page.goto(attacker)
    got = page.evaluate(ATTACKS_JS, [server.url, key])
    assert all(not v.startswith("read: ") or v == "read: opaque opaque" for v in got.values()), got
    assert not any("hybrid" in v.lower() or "rag." in v for v in got.values()), got
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    names = [c["name"] for c in httpx.get(server.url + "/api/collections", headers=headers).json()]
    assert names == ["guide"]  # the no-cors upload reached the server and was refused (403), nothing was added


def test_the_same_script_works_from_the_servers_own_origin(served, page) -> None:
    server, key = served
    if key:  # a browser cannot send a key on a WebSocket; the keyless server shows the control
        pytest.skip("the control runs against the keyless server")
    page.goto(server.url + "/healthz")
    got = page.evaluate(ATTACKS_JS, [server.url, key])
    assert got["fetch_ask_json"].startswith("read: ") and got["websocket"].startswith("read: ")
    assert got["fetch_collections"].startswith("read: ")
