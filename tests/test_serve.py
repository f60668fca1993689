"""``fictionworld serve``, driven the way real clients drive it: a real server (the CLI, its
supervisor and forked workers) on 127.0.0.1, Search-R1's batch POST read the way its
``_passages2string`` reads it, SkyRL's own search tool (the skyrl-gym package), the env's tools
with sessions that replay, every refusal, saturation, the time limit and a SIGTERM drain."""

from __future__ import annotations

import asyncio
import json
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from fictionworld.env.service import Limits, WorldService, passage_text
from fictionworld.knobs import Knobs

pytestmark = pytest.mark.cli

CLI = [sys.executable, "-m", "fictionworld.cli"]
URL_LINE = re.compile(r"http://\S+?:(\d+) serving")


class Server:
    def __init__(self, proc: subprocess.Popen, port: int):
        self.proc, self.port = proc, port
        self.url = f"http://127.0.0.1:{port}"
        self.stderr_lines: list[str] = []

    def post(self, path: str, json=None, **kw) -> httpx.Response:
        return httpx.post(self.url + path, json=json, timeout=30, **kw)

    def get(self, path: str) -> httpx.Response:
        return httpx.get(self.url + path, timeout=30)

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait()


def start(directory: Path, *args: str) -> Server:
    """The CLI's server on a free port, once its /health says ready."""
    proc = subprocess.Popen([*CLI, "serve", str(directory), "--port", "0", *args], stderr=subprocess.PIPE, text=True)
    lines: list[str] = []
    deadline = time.monotonic() + 60
    port = None
    while port is None:
        line = proc.stderr.readline()
        if not line:
            raise AssertionError(f"server exited early ({proc.wait()}): {''.join(lines)}")
        lines.append(line)
        m = URL_LINE.search(line)
        port = int(m.group(1)) if m else None
        assert time.monotonic() < deadline, "".join(lines)
    server = Server(proc, port)
    server.stderr_lines = lines
    threading.Thread(target=lambda: lines.extend(proc.stderr), daemon=True).start()  # keep the pipe drained
    while True:
        try:
            if server.get("/health").status_code == 200:
                return server
        except httpx.TransportError:
            pass
        assert time.monotonic() < deadline, "server never became ready"
        time.sleep(0.05)


@contextmanager
def running(directory: Path, *args: str):
    server = start(directory, *args)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def server(saved_world):
    with running(saved_world, "--workers", "2") as s:
        yield s


@pytest.fixture(scope="module")
def service(saved_world):
    return WorldService.open(saved_world)


# -- Search-R1 -------------------------------------------------------------------------------
def search_r1_passages(retrieval_result: list[dict]) -> str:
    """Search-R1's reading of one query's result (``generation.py: _passages2string``): the
    first line of ``document.contents`` is the title, the rest the text."""
    out = ""
    for idx, doc_item in enumerate(retrieval_result):
        content = doc_item["document"]["contents"]
        title = content.split("\n")[0]
        text = "\n".join(content.split("\n")[1:])
        out += f"Doc {idx + 1}(Title: {title}) {text}\n"
    return out


def test_search_r1_batch_of_hundreds(server, service, world):
    names = world.entities.name[:300].tolist()
    payload = {"queries": names, "topk": 3, "return_scores": True}  # as Search-R1's batch_search sends it
    r = server.post("/retrieve", payload)
    assert r.status_code == 200
    result = r.json()["result"]
    assert len(result) == 300
    web = world.web
    for name, docs in zip(names, result):
        assert 1 <= len(docs) <= 3
        assert all(set(d) == {"document", "score"} for d in docs)
        assert [d["score"] for d in docs] == sorted((d["score"] for d in docs), reverse=True)
        text = search_r1_passages(docs)
        assert text.startswith('Doc 1(Title: "')
        # The passage is the page: the entity's own article among the results, read in full.
        urls = [d["document"]["url"] for d in docs]
        article = web.article_url_of(world.find(name)[0].id)
        if article in urls:
            page = web.open(article, web.knobs.model_copy(update={"list_page_size": 1000}))
            assert docs[urls.index(article)]["document"]["contents"] == passage_text(page, 2_000)
    hit = sum(web.article_url_of(world.find(n)[0].id) in [d["document"]["url"] for d in docs]
              for n, docs in zip(names, result))  # fmt: skip
    assert hit >= 0.9 * len(names), hit  # searching a name finds its article
    assert result == service.retrieve(names, 3, True)  # the same as in process, worker or not


def unmatched_closing(text: str) -> int:
    """How many ")" in ``text`` close no "(" before them (a passage cut short may leave a "(" open)."""
    depth = stray = 0
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            stray, depth = (stray + 1, 0) if depth == 0 else (stray, depth - 1)
    return stray


def test_passages_keep_no_piece_of_a_link_target(server, world):
    """Namesakes' article URLs hold parentheses (``…/wiki/Lira_(film)``): a passage carries each
    link's text and nothing of its target, not even the target's closing ")"."""
    pages = world.web.pages
    linking = [r for r in range(len(pages)) if re.search(r"\]\([^)\s]*\(", pages.text(r))]
    assert len(linking) >= 20, "the world has pages linking to URLs with parentheses"
    queries = [pages.titles[r] for r in linking[:200]]
    result = server.post("/retrieve", {"queries": queries, "topk": 3, "return_scores": True}).json()["result"]
    docs = [d["document"] for q in result for d in q]
    tested = [d for d in docs if re.search(r"\]\([^)\s]*\(", world.web.open(d["url"]).text)]
    assert len(tested) >= 20
    for d in docs:
        assert unmatched_closing(d["contents"]) == 0, d["contents"]
        assert "](" not in d["contents"]


def test_retrieve_without_scores_gives_bare_documents(server):
    r = server.post("/retrieve", {"queries": ["companies founded in"], "topk": 2})
    docs = r.json()["result"][0]
    assert len(docs) == 2 and all(set(d) >= {"id", "contents", "url", "title", "date"} for d in docs)
    assert all(d["contents"].startswith(f'"{d["title"]}"\n') for d in docs)


def test_retrieve_default_topk_blank_query_and_extra_keys(server):
    r = server.post("/retrieve", {"queries": ["", "founded in"], "return_scores": True, "extra": "ignored"})
    assert r.status_code == 200
    blank, other = r.json()["result"]
    assert blank == [] and len(other) == 3  # Search-R1's default topk is 3


def test_skyrl_search_tool_against_the_server(server, world):
    """SkyRL's own client (skyrl-gym's search tool) posts {"query": …} and reads the result."""
    from skyrl_gym.tools.search import SearchToolGroup

    tool = SearchToolGroup(search_url=server.url + "/retrieve", topk=3, log_requests=False)
    name = world.entities.name[5]
    out = tool.search(name)
    text = out if isinstance(out, str) else str(out)
    assert "Doc 1:" in text and name in text and "error" not in text.lower()
    raw = server.post("/retrieve", {"query": name, "topk": 3, "return_scores": True}).json()
    assert len(raw["result"]) == 1 and len(raw["result"][0]) == 3


# -- the env's tools ------------------------------------------------------------------------------
def test_search_and_open_show_what_the_env_shows(server, world):
    name = world.entities.name[7]
    session = world.web.session(seed=0)
    want = session.search(name).text
    got = server.post("/search", {"query": name}).json()
    assert got["status"] == "ok" and got["text"] == want
    assert got["results"][0]["rank"] == 1 and got["results"][0]["url"] in want
    url = got["results"][0]["url"]
    opened = server.post("/open", {"url": url}).json()
    assert opened["status"] == "ok" and opened["text"] == session.open(url).text
    assert opened["page"]["url"] == url
    missing = server.post("/open", {"url": "https://en.fictopedia.org/wiki/No_Such_Page"}).json()
    assert missing["status"] == "not_found" and missing["text"].startswith("Error 404")
    bad = server.post("/open", {"url": "not a url"}).json()
    assert bad["status"] == "error" and bad["text"].startswith("Error: malformed URL")


def test_sessions_replay_faults_across_workers(server, world):
    knobs = {"fault_rate": 0.5}
    calls = [("/search", {"query": n}) for n in world.entities.name[20:32].tolist()]

    def episode(session: str) -> list[tuple[str, str]]:
        out = []
        for path, body in calls:
            # a new connection per call: the calls land on either worker
            r = httpx.post(server.url + path, json=body | {"session": session, "seed": 42, "knobs": knobs}, timeout=30)
            out.append((r.json()["status"], r.json()["text"]))
        return out

    first, second = episode("ep-a"), episode("ep-b")
    assert first == second  # same seed, same calls: the same faults, whichever worker answered
    assert {s for s, _ in first} == {"ok", "fault"}
    # The env's own session with that seed draws the same faults.
    ws = world.web.session(Knobs(fault_rate=0.5), seed=42)
    assert [ws.search(b["query"]).status for _, b in calls] == [s for s, _ in first]
    # Ending a session starts its draws again; `call` makes a draw stateless.
    assert server.post("/sessions/end", {"session": "ep-a", "seed": 42}).json()["ended"] is True
    assert episode("ep-a") == first
    third = [server.post(p, b | {"session": "x", "seed": 42, "knobs": knobs, "call": i}).json()["text"]
             for i, (p, b) in enumerate(calls)]  # fmt: skip
    assert third == [t for _, t in first]
    pids = {server.get("/info").json()["pid"] for _ in range(40)}
    assert len(pids) == 2  # both workers answered


def test_health_info_metrics_docs(server, world):
    assert server.get("/health").json() == {"status": "ready", "world_hash": world.world_hash}
    info = server.get("/info").json()
    assert info["world_hash"] == world.world_hash and info["counts"]["pages"] == len(world.web.pages)
    assert info["knobs"] == world.web.knobs.model_dump(mode="json") and info["renderer"]
    for _ in range(100):  # each worker maps the world in, in the background, once it starts (--preload)
        done = [server.get("/info").json()["preload"] for _ in range(8)]
        if all(d["state"] == "done" for d in done):
            break
        time.sleep(0.1)
    assert all(d["state"] == "done" and d["supported"] and d["mapped_bytes"] > 0 for d in done), done
    metrics = server.get("/metrics").text
    assert "fictionworld_requests_total{" in metrics and "\nfictionworld_in_flight " in metrics
    assert server.get("/docs").status_code == 200
    spec = server.get("/openapi.json").json()
    assert {"/retrieve", "/search", "/open", "/health", "/info"} <= set(spec["paths"])


# -- refusals -------------------------------------------------------------------------------------
BAD = [
    ("/retrieve", b'{"queries": ["a"', 400, "malformed JSON"),
    ("/retrieve", b"[1, 2]", 422, "JSON object"),
    ("/retrieve", b'{"queries": "one string"}', 422, "queries"),
    ("/retrieve", b'{"queries": [1, 2]}', 422, "queries.0"),
    ("/retrieve", b'{"queries": ["a"], "topk": "3"}', 422, "topk"),
    ("/retrieve", b'{"queries": ["a"], "topk": 51}', 422, "topk must be between 1 and 50"),
    ("/retrieve", b'{"queries": []}', 422, "empty"),
    ("/retrieve", b"{}", 422, "either queries"),
    ("/retrieve", b'{"queries": ["a"], "query": "b"}', 422, "either queries"),
    ("/retrieve", b'{"queries": ["' + b"a" * 1001 + b'"]}', 413, "at most 1,000"),
    ("/retrieve", b'{"queries": [' + b",".join([b'"a"'] * 1025) + b"]}", 413, "at most 1,024"),
    ("/search", b'{"query": "a", "page": 0}', 422, "page"),
    ("/search", b'{"query": "a", "k": 1000}', 422, "k must be between"),
    ("/search", b'{"query": "a", "typo": 1}', 422, "typo"),
    ("/search", b'{"query": "a", "knobs": {"fault_rate": 2}}', 422, "fault_rate"),
    ("/search", b'{"query": "a", "knobs": {"nope": 1}}', 422, "valid knobs"),
    ("/search", b'{"query": "a", "call": 3}', 422, "without a session"),
    ("/search", b'{"query": "a", "session": "' + b"s" * 201 + b'"}', 413, "session id"),
    ("/open", b'{"url": "https://a.b/' + b"x" * 2000 + b'"}', 413, "url is"),
    ("/open", b'{"url": 5}', 422, "url"),
    ("/open", b"\xff\xfe", 400, "malformed JSON"),
]


@pytest.mark.parametrize("path,body,status,says", BAD, ids=[f"{p}-{i}" for i, (p, *_) in enumerate(BAD)])
def test_bad_requests_get_one_line_4xx(server, path, body, status, says):
    r = server.post(path, content=body, headers={"content-type": "application/json"})
    assert r.status_code == status, r.text
    error = r.json()["error"]
    assert says in error and "\n" not in error and "Traceback" not in error and len(error) < 300


def test_body_size_limit_by_length_and_while_reading(server):
    big = b'{"queries": ["' + b"a" * (5 << 20) + b'"]}'
    r = server.post("/retrieve", content=big)
    assert r.status_code == 413 and "over the limit" in r.json()["error"]

    def chunks():  # no Content-Length: the limit holds while the body is read
        yield b'{"queries": ["'
        for _ in range(80):
            yield b"a" * 65_536
        yield b'"]}'

    r = server.post("/retrieve", content=chunks())
    assert r.status_code == 413 and "over the limit" in r.json()["error"]


def test_a_damaged_index_is_a_json_500_not_a_plain_text_one(saved_world):
    """tantivy's panic on a damaged index, through the app in this process: the JSON error
    every other failure gets (a BaseException would escape the app's handlers)."""
    from web_helpers import Panicking, tantivy_panic

    from fictionworld.integrations.http import create_app

    service = WorldService.open(saved_world)
    index = service.web.index
    index.searcher = Panicking(tantivy_panic(index.searcher))

    async def ask():
        transport = httpx.ASGITransport(app=create_app(service), raise_app_exceptions=False)  # (as a server does)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            return await client.post("/search", json={"query": "robotics company"})

    r = asyncio.run(ask())
    assert r.status_code == 500 and r.headers["content-type"].startswith("application/json")
    assert "DamagedIndexError" in r.json()["error"]


def test_unknown_routes_and_methods(server):
    assert server.get("/retrieve").status_code == 405
    r = server.get("/nope")
    assert r.status_code == 404 and r.json() == {"error": "Not Found"}


def test_saturation_answers_503_with_retry_after_and_nothing_else(saved_world, world):
    queries = (world.entities.name.tolist() * 3)[:1000]

    async def flood(url: str) -> list[httpx.Response]:
        async with httpx.AsyncClient(timeout=60, limits=httpx.Limits(max_connections=64)) as client:
            return await asyncio.gather(*(client.post(url, json={"queries": queries, "topk": 3}) for _ in range(24)))

    with running(saved_world, "--workers", "1", "--max-in-flight", "2") as s:
        replies = asyncio.run(flood(s.url + "/retrieve"))
        codes = [r.status_code for r in replies]
        assert set(codes) == {200, 503}, codes
        busy = [r for r in replies if r.status_code == 503]
        assert all(r.headers["retry-after"] == "1" and "busy" in r.json()["error"] for r in busy)
        assert all(len(r.json()["result"]) == 1000 for r in replies if r.status_code == 200)
        assert s.get("/health").status_code == 200  # GETs are never turned away

        async def many_small(url: str) -> list[httpx.Response]:  # bodies that arrive whole, handled at once
            async with httpx.AsyncClient(timeout=60, limits=httpx.Limits(max_connections=64)) as client:
                return await asyncio.gather(*(client.post(url, json={"query": q}) for q in queries[:64]))

        small = [r.status_code for r in asyncio.run(many_small(s.url + "/search"))]
        assert set(small) == {200, 503}, small  # requests waiting on the event loop count too
        assert 'reason="busy"} ' + str(len(busy) + small.count(503)) in s.get("/metrics").text


def test_request_time_limit_answers_504(saved_world, world):
    queries = (world.entities.name.tolist() * 5)[:1000]
    with running(saved_world, "--timeout", "0.05") as s:
        r = s.post("/retrieve", {"queries": queries})
        assert r.status_code == 504 and "time limit of 0.05 s" in r.json()["error"]
        assert s.post("/retrieve", {"queries": queries[:1]}).status_code == 200


# -- clients that hold a worker: slow batches, stalled bodies, half-sent headers -----------------
def made_up_queries(n: int, words: int, seed: int) -> list[str]:
    """Queries of made-up words, none in the world's vocabulary: the speller corrects each."""
    rng = random.Random(seed)
    word = lambda: "".join(rng.choice("bcdfgklmnprstvz") + rng.choice("aeiou") for _ in range(4))
    return [" ".join(word() for _ in range(words)) for _ in range(n)]


def raw(port: int, data: bytes) -> socket.socket:
    """A connection that sent ``data`` and nothing more."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=20)
    sock.sendall(data)
    return sock


def until_closed(sock: socket.socket) -> bytes:
    """What the server sends until it closes the connection (a socket timeout fails the test)."""
    data = b""
    try:
        while chunk := sock.recv(4096):
            data += chunk
    except ConnectionResetError:
        pass
    sock.close()
    return data


def counted(metrics: str, name: str, **labels: str) -> int:
    """A counter's value in /metrics text (0 where it has no line)."""
    inner = ",".join(f'{k}="{v}"' for k, v in labels.items())
    m = re.search(rf"^{name}{{{re.escape(inner)}}} (\d+)$", metrics, re.M)
    return int(m.group(1)) if m else 0


def test_a_slow_batch_is_searched_off_the_event_loop_and_stops_at_its_share_of_work(saved_world):
    """A Search-R1 batch of made-up words (each corrected) is searched on a thread: /health and
    a small search on the same worker answer while it runs (before, both waited for the whole
    batch), and the batch stops at its share of work (--max-work), answered 504 saying so, long
    before the request's time limit."""
    slow = made_up_queries(1024, 30, seed=3)
    with running(saved_world, "--workers", "1", "--max-work", "2", "--timeout", "300") as s:
        out: dict = {}

        def batch():
            t0 = time.monotonic()
            out["r"] = httpx.post(s.url + "/retrieve", json={"queries": slow}, timeout=300)
            out["s"] = time.monotonic() - t0

        t = threading.Thread(target=batch)
        t.start()
        time.sleep(0.5)  # the batch is being searched
        health = httpx.get(s.url + "/health", timeout=10)
        small = httpx.post(s.url + "/search", json={"query": "robotics company"}, timeout=10)
        during = t.is_alive()
        t.join(300)
        assert during, "the batch ended before /health and /search answered"
        assert health.status_code == 200 and small.status_code == 200 and small.json()["status"] == "ok"
        r = out["r"]
        assert r.status_code == 504 and "the 2 s of search work one request may use" in r.json()["error"], r.text
        assert out["s"] < 100  # stopped at its share, not at the time limit of 300 s


def test_bodies_that_stall_hold_no_place_and_get_408_at_the_body_timeout(saved_world):
    """Clients that send part of a body and stop hold none of the worker's --max-in-flight
    places (before, two of them held a worker of --max-in-flight 2: every other request got
    503); each is answered 408 when --body-timeout passes."""
    head = b"POST /search HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n"
    with running(saved_world, "--workers", "1", "--max-in-flight", "2", "--body-timeout", "1.5") as s:
        socks = [raw(s.port, head + b'{"query": "rob') for _ in range(6)]
        time.sleep(0.3)
        r = httpx.post(s.url + "/search", json={"query": "robotics company"}, timeout=10)
        assert r.status_code == 200 and r.json()["status"] == "ok", r.text
        for sock in socks:
            data = b""
            while b"}" not in data and (chunk := sock.recv(4096)):
                data += chunk
            sock.close()
            assert data.startswith(b"HTTP/1.1 408") and b"not all received within 1.5 s of its headers" in data, data
        metrics = s.get("/metrics").text
        assert counted(metrics, "fictionworld_requests_total", path="/search", status="408") == 6
        assert counted(metrics, "fictionworld_rejected_total", reason="body_timeout") == 6


def test_half_sent_headers_time_out_and_a_full_worker_makes_room(saved_world):
    """Connections that send part of their headers and stop are closed at --header-timeout
    (before, never: thousands stayed open and, past the open-file limit, every new client was
    reset), and a worker holds at most --max-connections: one more closes the one that has
    waited longest for a request, so a real client still gets in."""
    with running(saved_world, "--workers", "1", "--header-timeout", "2", "--max-connections", "8") as s:
        half = [raw(s.port, b"GET /health HTTP/1.1\r\nHost: x\r\n") for _ in range(20)]
        r = httpx.get(s.url + "/health", timeout=10)
        assert r.status_code == 200
        replies = [until_closed(sock) for sock in half]  # each ends: closed to make room, or timed out
        timed_out = [d for d in replies if d]
        assert 1 <= len(timed_out) <= 8 and replies.count(b"") == 20 - len(timed_out)
        for data in timed_out:
            head, _, body = data.partition(b"\r\n\r\n")
            assert head.startswith(b"HTTP/1.1 408") and b"content-type: application/json" in head
            assert json.loads(body) == {"error": "request headers not received within 2 s"}
        metrics = s.get("/metrics").text
        assert counted(metrics, "fictionworld_rejected_total", reason="header_timeout") == len(timed_out)
        assert counted(metrics, "fictionworld_rejected_total", reason="connections") >= 20 - len(timed_out)


def test_a_worker_whose_connections_are_all_busy_refuses_one_more_with_a_json_503(saved_world):
    """With every connection answering a request, none is closed to make room: the new one is
    told so (503, Retry-After) and closed."""
    slow = made_up_queries(1024, 30, seed=4)
    with running(saved_world, "--workers", "1", "--max-connections", "2", "--max-work", "3") as s:
        batches = [threading.Thread(target=lambda: httpx.post(s.url + "/retrieve", json={"queries": slow}, timeout=60))
                   for _ in range(2)]  # fmt: skip
        for t in batches:
            t.start()
        time.sleep(0.5)  # both are being searched
        data = until_closed(raw(s.port, b""))
        for t in batches:
            t.join(60)
        head, _, body = data.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 503") and b"retry-after: 1" in head, data
        assert json.loads(body)["error"] == "server busy: 2 connections open, the most this worker holds; retry"


def test_a_request_that_is_not_http_gets_a_json_400(server):
    """uvicorn's own refusal of a request it cannot parse is JSON, as every other refusal."""
    data = until_closed(raw(server.port, b"NOT HTTP AT ALL\r\n\r\n"))
    head, _, body = data.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 400") and b"content-type: application/json" in head.lower(), data
    error = json.loads(body)["error"]
    assert "not a well-formed HTTP/1.1 request" in error and "\n" not in error


def test_metrics_count_the_whole_server_whichever_worker_answers(server):
    def searches(text: str) -> int:
        return counted(text, "fictionworld_requests_total", path="/search", status="200")

    before = searches(server.get("/metrics").text)
    for _ in range(20):  # a new connection each: either worker answers
        assert httpx.post(server.url + "/search", json={"query": "founded in"}, timeout=30).status_code == 200
    seen: dict[str, int] = {}
    for _ in range(40):
        text = httpx.get(server.url + "/metrics", timeout=30).text
        pid = re.search(r'^fictionworld_process\{pid="(\d+)",workers="2"\} 1$', text, re.M).group(1)
        seen[pid] = searches(text)
    assert len(seen) == 2 and set(seen.values()) == {before + 20}, seen


def test_sigterm_drains_in_flight_requests_then_exits_0(saved_world, world):
    queries = (world.entities.name.tolist() * 3)[:1000]
    s = start(saved_world, "--workers", "2")
    out: dict = {}

    def slow():
        out["r"] = httpx.post(s.url + "/retrieve", json={"queries": queries, "topk": 5}, timeout=60)

    t = threading.Thread(target=slow)
    t.start()
    time.sleep(0.15)  # the batch is being answered
    s.proc.send_signal(signal.SIGTERM)
    t.join(60)
    assert out["r"].status_code == 200 and len(out["r"].json()["result"]) == 1000
    assert s.proc.wait(timeout=30) == 0
    with pytest.raises(httpx.TransportError):
        httpx.get(s.url + "/health", timeout=2)


def test_a_killed_worker_is_replaced(saved_world):
    import psutil

    with running(saved_world, "--workers", "2") as s:
        workers = psutil.Process(s.proc.pid).children()
        assert len(workers) == 2
        os.kill(workers[0].pid, signal.SIGKILL)
        deadline = time.monotonic() + 20
        while True:
            now = {p.pid for p in psutil.Process(s.proc.pid).children()}
            if len(now) == 2 and workers[0].pid not in now:
                break
            assert time.monotonic() < deadline, now
            time.sleep(0.1)
        pids = {s.get("/info").json()["pid"] for _ in range(40)}
        assert pids == now
        assert any("worker 0 died (signal 9)" in line for line in s.stderr_lines)


# -- start-up ------------------------------------------------------------------------------------
def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=120)


def test_missing_or_corrupt_world_fails_at_start_with_one_line(saved_world, tmp_path):
    r = cli("serve", str(tmp_path / "nope"), "--port", "0")
    assert r.returncode == 1 and r.stderr.strip().count("\n") == 0 and "no such directory" in r.stderr
    broken = tmp_path / "broken"
    shutil.copytree(saved_world, broken)
    (broken / "pages.arrow").write_bytes((broken / "pages.arrow").read_bytes()[:1000])
    r = cli("serve", str(broken), "--port", "0")
    assert r.returncode == 1 and r.stderr.startswith("error: cannot serve") and "pages.arrow" in r.stderr
    assert "Traceback" not in r.stderr and r.stderr.strip().count("\n") == 0
    (broken / "manifest.json").write_text("{")
    r = cli("serve", str(broken), "--port", "0")
    assert r.returncode == 1 and "manifest.json" in r.stderr and "Traceback" not in r.stderr


def test_port_in_use_is_one_line(server, saved_world):
    r = cli("serve", str(saved_world), "--port", str(server.port))
    assert r.returncode == 1 and f"cannot listen on 127.0.0.1:{server.port}" in r.stderr
    assert "Traceback" not in r.stderr


def test_binds_loopback_by_default_and_warns_otherwise(saved_world):
    with running(saved_world) as s:
        assert "warning" not in "".join(s.stderr_lines)
    with running(saved_world, "--host", "0.0.0.0") as s:
        text = "".join(s.stderr_lines)
        assert "warning: binding 0.0.0.0" in text and "reachable from other machines" in text


def test_limits_are_a_closed_model():
    with pytest.raises(ValueError):
        Limits(max_topk=0)
    with pytest.raises(ValueError):
        Limits(nope=1)


def test_session_table_is_shared_by_forked_workers_and_survives_a_killed_holder():
    from fictionworld.env.service import SessionTable

    table = SessionTable(4)
    assert [table.next_call(7) for _ in range(3)] == [0, 1, 2]
    pid = os.fork()
    if pid == 0:  # a worker: counts once, then dies holding the lock
        table.next_call(7)
        with table._lock():
            os.kill(os.getpid(), signal.SIGKILL)
        os._exit(0)  # pragma: no cover
    os.waitpid(pid, 0)
    assert table.next_call(7) == 4  # the child's call counted, and its lock went with it
    for key in (1, 2, 3):
        table.next_call(key)
    table.next_call(8)  # a full table forgets the least recently used session (7)
    assert len(table) == 4 and table.next_call(7) == 0
    assert table.forget(7) and not table.forget(99)


def test_one_slow_query_stops_at_the_requests_deadline_inside_the_query(service, monkeypatch):
    """``retrieve`` passes its deadline into each query: one query of many unknown words whose
    corrections pass it is refused 504 saying so, where before the deadline was checked between
    queries only and one query ran all its words (here 1.5 s or more for a 0.3 s limit)."""
    from fictionworld.env.service import Deadline, RequestError
    from fictionworld.web.speller import Speller

    spellings = Speller.spellings  # each unknown word's spellings take 50 ms more: 30 words, 1.5 s at least
    monkeypatch.setattr(Speller, "spellings", lambda self, *a, **kw: (time.sleep(0.05), spellings(self, *a, **kw))[1])
    query = made_up_queries(1, 30, seed=4)
    t0 = time.monotonic()
    with pytest.raises(RequestError) as e:
        service.retrieve(query, 3, False, Deadline(0.3))
    assert e.value.status == 504 and "took over its time limit of 0.3 s" in str(e.value)
    assert time.monotonic() - t0 < 2.5


def test_one_query_of_many_unknown_words_stops_at_max_work_live(saved_world):
    """Live: one /retrieve query of 111 made-up words (1,000 characters, the longest a query
    may be), each corrected, is answered 504 naming --max-work soon after the cap passes: the
    cap is checked between the query's words. Before, it was checked between queries only, so
    a batch of one query ran all its words and was answered 200 whatever the cap."""
    query = made_up_queries(1, 111, seed=6)
    assert len(query[0]) <= 1000
    with running(saved_world, "--workers", "1", "--max-work", "0.002", "--timeout", "300") as s:
        t0 = time.monotonic()
        r = httpx.post(s.url + "/retrieve", json={"queries": query}, timeout=300)
        took = time.monotonic() - t0
        assert r.status_code == 504 and "the 0.002 s of search work one request may use" in r.json()["error"], r.text
        assert took < 30  # generous: the cap plus one word's correction (under 1 ms here) and the round trip
