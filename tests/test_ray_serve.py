"""The HTTP app on Ray Serve: a local cluster, a saved world deployed with 2 replicas, answered
over Serve's proxy exactly as the world service answers in process."""

from __future__ import annotations

import os
import socket
import time

import pytest

serve = pytest.importorskip("ray.serve", reason="ray[serve] is not installed")
httpx = pytest.importorskip("httpx")


from fictionworld.env.service import Limits, WorldService  # noqa: E402
from fictionworld.knobs import Knobs  # noqa: E402

pytestmark = pytest.mark.ray

REPLICAS = 2
# Not the defaults: the replicas must rebuild both from the dicts they are sent.
LIMITS = Limits(default_topk=2, max_topk=20, passage_chars=600)
KNOBS = Knobs(results_per_page=4, snippet_leak_rate=0.5)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def served(saved_world):
    """(base URL, the world's service in this process, seconds the deployment took), on the
    run's Ray cluster; Serve is shut down after the module."""
    from conftest import shared_ray

    from fictionworld.integrations.ray_serve import deploy

    shared_ray()
    port = _free_port()
    try:
        serve.start(http_options={"host": "127.0.0.1", "port": port},
                    logging_config={"log_level": "WARNING", "enable_access_log": False})  # fmt: skip
        t0 = time.perf_counter()
        deploy(saved_world, replicas=REPLICAS, knobs=KNOBS, limits=LIMITS)
        seconds = time.perf_counter() - t0
        yield f"http://127.0.0.1:{port}", WorldService.open(saved_world, knobs=KNOBS, limits=LIMITS), seconds
    finally:
        serve.shutdown()


@pytest.fixture(scope="module")
def client(served):
    with httpx.Client(base_url=served[0], timeout=30) as c:
        yield c


def _titles(service: WorldService, n: int) -> list[str]:
    titles = service.web.pages.titles
    step = max(1, len(titles) // n)
    return [titles[i * step] for i in range(n)]


def test_health(served, client):
    _, service, seconds = served
    r = client.get("/health")
    assert r.status_code == 200, r.text
    assert r.json() == {"status": "ready", "world_hash": service.web.world.world_hash}
    assert seconds < 60


def test_retrieve_search_r1_shape(served, client):
    service = served[1]
    queries = _titles(service, 3)
    r = client.post("/retrieve", json={"queries": queries, "topk": 3, "return_scores": True})
    assert r.status_code == 200, r.text
    result = r.json()["result"]
    assert len(result) == len(queries)
    for passages in result:
        assert 1 <= len(passages) <= 3
        for p in passages:
            assert set(p) == {"document", "score"} and isinstance(p["score"], float)
            doc = p["document"]
            assert set(doc) == {"id", "contents", "url", "title", "date"}
            assert doc["contents"].startswith(f'"{doc["title"]}"\n')
            assert len(doc["contents"]) <= LIMITS.passage_chars + len(doc["title"]) + 5
    assert result == service.retrieve(queries, 3, True)
    # The replicas' default topk is the one deployed (2), not the service's own default (3).
    r = client.post("/retrieve", json={"query": queries[0]})
    assert r.status_code == 200, r.text
    assert r.json()["result"] == service.retrieve([queries[0]], None, False)
    assert len(r.json()["result"][0]) == 2


def test_search_text_as_in_process(served, client):
    service = served[1]
    for q in _titles(service, 2):
        r = client.post("/search", json={"query": q, "session": "ep-1", "seed": 3, "call": 0})
        assert r.status_code == 200, r.text
        assert r.json()["text"] == service.search(q, session="ep-1", seed=3, call=0)["text"]
        assert len(r.json()["results"]) <= KNOBS.results_per_page


def test_info_and_refusals_from_replicas(served, client):
    info = client.get("/info").json()
    assert info["knobs"] == KNOBS.model_dump(mode="json")
    assert info["limits"] == LIMITS.model_dump()
    assert info["pid"] != os.getpid()
    # The request guard (a custom ASGI middleware) runs in the replicas: a body over the limit.
    r = client.post("/retrieve", content=b"x" * (LIMITS.max_body_bytes + 1))
    assert r.status_code == 413 and "over the limit" in r.json()["error"]
    r = client.post("/retrieve", json={"queries": ["a"], "topk": 999})
    assert r.status_code == 422 and r.json()["error"].startswith("topk must be between")


def test_two_replicas_answer(served, client):
    status = serve.status().applications["fictionworld"]
    assert status.status == "RUNNING"
    assert [d.replica_states for d in status.deployments.values()] == [{"RUNNING": REPLICAS}]
    pids = set()
    for _ in range(200):
        pids.add(client.get("/info").json()["pid"])
        if len(pids) == REPLICAS:
            break
    assert len(pids) == REPLICAS
