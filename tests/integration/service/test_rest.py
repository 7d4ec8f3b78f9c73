"""REST over a real server: collections, documents, retrieval, the Answer contract, selections,
JSON errors (never a traceback)."""

from __future__ import annotations

import httpx
import pytest

from tests.integration.service.conftest import KEY, auth

QUESTION = "How does hybrid mode fuse the dense and sparse rankings?"


@pytest.fixture(scope="module")
def client(start_server, guide_data):
    served = start_server(guide_data, api_keys=(KEY,))
    with httpx.Client(base_url=served.url, headers=auth(), timeout=60) as c:
        yield c


def test_health_needs_no_key(client: httpx.Client) -> None:
    r = httpx.get(str(client.base_url) + "/healthz")
    assert r.status_code == 200 and r.json() == {"status": "ok"}


def test_collections_and_documents(client: httpx.Client) -> None:
    (guide,) = client.get("/api/collections").json()
    assert guide["name"] == "guide" and guide["documents"] == 3 and guide["chunks"] > 10
    assert guide["corpus_version"] and guide["built_at"] and guide["model"]
    docs = client.get("/api/collections/guide/documents").json()
    assert sorted(d["path"] for d in docs) == ["04-retrieval-modes-and-fusion.md", "06-citations-and-the-answer-contract.md",
                                             "08-selected-text-mode.md"]
    assert sum(d["chunks"] for d in docs) == guide["chunks"]
    missing = client.get("/api/collections/nope/documents")
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "not_found"


def test_retrieve_returns_the_pool_with_scores_and_cut_reasons(client: httpx.Client) -> None:
    r = client.post("/api/retrieve", json={"question": QUESTION, "top_k": 2, "mode": "hybrid"})
    assert r.status_code == 200
    pool = r.json()
    assert pool["retrieval_mode"] == "hybrid" and pool["rank_score_kind"] == "rrf"
    kept = [c for c in pool["candidates"] if c["kept"]]
    cut = [c for c in pool["candidates"] if not c["kept"]]
    assert len(kept) == 2 and cut and {c["dropped_reason"] for c in cut} <= {"threshold", "dedupe", "top_k", "filter"}
    assert all(c["fused_score"] is not None for c in kept)
    assert kept[0]["chunk"]["path"] == "04-retrieval-modes-and-fusion.md"


def test_ask_returns_the_answer_contract(client: httpx.Client, start_server, guide_data) -> None:
    answer = client.post("/api/ask", json={"question": QUESTION}).json()
    assert answer["status"] in ("ok", "partial") and "[1]" in answer["answer"]
    c = answer["citations"][0]
    assert c["path"].endswith(".md") and 1 <= c["start_line"] <= c["end_line"] and "section" in c and "page" in c
    assert answer["evidence"] and answer["validation"] is not None
    meta = answer["metadata"]
    assert meta["collection"] == "guide" and meta["corpus_version"] and meta["latency_ms"]["total"] > 0
    # the same object `ragcore ask --json` prints: Engine.ask's Answer, as JSON
    direct = client.post("/api/ask", json={"question": QUESTION, "top_k": 3}).json()
    assert set(direct) == {"question", "answer", "status", "citations", "evidence", "candidates", "validation",
                           "metadata", "error_message", "confidence"}
    assert direct["metadata"]["config"]["top_k"] == 3


def test_selection_is_text_never_a_path(client: httpx.Client) -> None:
    passage = ("The lighthouse keeper lit the lamp at dusk every evening. The lamp burned whale oil until 1880, "
               "when the keeper switched to kerosene.")
    answer = client.post("/api/ask", json={"question": "What did the lamp burn before 1880?", "selection": passage,
                                           "context": "selection", "selection_source": "/etc/passwd"}).json()
    assert answer["status"] in ("ok", "partial") and "whale oil" in answer["answer"]
    assert answer["citations"][0]["path"] == "/etc/passwd"  # a label only: the file was never read
    assert "root:" not in answer["answer"]
    short = client.post("/api/ask", json={"question": "What?", "selection": "too short", "context": "selection"})
    assert short.status_code == 422 and "too short" in short.json()["error"]["message"]


def test_bad_values_are_json_errors_naming_the_rule(client: httpx.Client) -> None:
    r = client.post("/api/ask", json={"question": QUESTION, "top_k": 0})
    assert r.status_code == 422
    assert r.json()["error"]["message"] == "top_k=0 is not allowed: top_k must be an integer from 1 to 1000"
    for big, shown in ((1001, "1001"), (123456789012345678901234567890, "123456789012… (30 digits)")):
        r = client.post("/api/retrieve", json={"question": QUESTION, "top_k": big})
        assert r.status_code == 422 and r.json()["error"] == {
            "code": "invalid_setting", "type": "invalid_setting",
            "message": f"top_k={shown} is not allowed: top_k must be an integer from 1 to 1000"}
    r = client.post("/api/ask", content=b"{not json", headers={"Content-Type": "application/json"})
    assert r.status_code == 422 and "error" in r.json() and "Traceback" not in r.text
    r = client.post("/api/ask", json={"question": ""})
    assert r.status_code == 422 and r.json()["error"]["message"].startswith("question:")
    r = client.post("/api/ask", json={"question": QUESTION, "unknown_field": 1})
    assert r.status_code == 422
    assert client.get("/api/nowhere").json()["error"]["code"] == "not_found"
    # a collection that does not exist is a 404 before any question runs (service/collections.py)
    missing = client.post("/api/ask", json={"question": QUESTION, "collection": "nope"})
    assert missing.status_code == 404 and "nope" in missing.json()["error"]["message"]


def test_openapi_is_served_at_docs(client: httpx.Client) -> None:
    assert "swagger" in client.get("/docs").text.lower()
    paths = client.get("/openapi.json").json()["paths"]
    assert {"/api/ask", "/api/ask/stream", "/api/retrieve", "/v1/chat/completions", "/v1/models",
            "/api/collections/{name}/ingest", "/api/jobs/{job_id}"} <= set(paths)


def test_the_fast_serialiser_writes_what_to_jsonable_writes(client: httpx.Client, start_server, guide_data) -> None:
    import json
    import math

    from ragcore.service.wire import event_json, json_bytes, sse
    from ragcore.types import Event, to_jsonable

    served = start_server(guide_data)
    result = served.engine.retrieve(QUESTION)
    answer = served.engine.ask(QUESTION)
    selection = served.engine.ask("What did the lamp burn?", context="selection",
                                  selection="The lamp burned whale oil until 1880, when the keeper switched to kerosene.")
    odd = {"nan": math.nan, "inf": -math.inf, 3: (1.23456789, {"x": 1e-9}), "answer": answer}
    for obj in (result, answer, selection, odd):
        raw = json_bytes(obj)
        assert b"\n" not in raw and b"NaN" not in raw  # one strict JSON line: an SSE data field
        assert json.loads(raw) == to_jsonable(obj)
    assert json.loads(json_bytes(answer))["validation"]["unsupported"] == list(answer.validation.unsupported)
    assert "query_vector" not in json.loads(json_bytes(result))  # a field to_jsonable leaves out
    ev = Event("done", "r1", 3, 1.5, {"status": "ok", "answer": answer})
    head, data = sse(event_json(ev)).decode().split("\n")[:2]
    assert head == "event: rag.done" and json.loads(data[len("data: "):])["data"]["answer"] == to_jsonable(answer)
