"""The MCP tools (``fictionworld.integrations.mcp``), through the official SDK's own client: in
process, over stdio and over streamable HTTP (the ``fictionworld mcp`` command in a subprocess).
Every text an agent reads must be the env's text for the same call."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import anyio
import httpx
import pytest

pytest.importorskip("mcp")

from mcp import Client, StdioServerParameters  # noqa: E402
from mcp.client.stdio import stdio_client  # noqa: E402

from fictionworld.env.service import WorldService  # noqa: E402
from fictionworld.env.tools import TOOLS  # noqa: E402
from fictionworld.integrations.mcp import SEED_META, SESSION_META, build_mcp_server  # noqa: E402
from fictionworld.knobs import Knobs  # noqa: E402
from fictionworld.web.web import FAULT_TEXT  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
CLI = [sys.executable, "-m", "fictionworld.cli", "mcp"]


@pytest.fixture(scope="module")
def service(saved_world) -> WorldService:
    return WorldService.open(saved_world)


@pytest.fixture(scope="module")
def query(world) -> str:
    return str(world.entities.name[5])  # an entity's name: its own article ranks first


def schema_view(schema: dict) -> dict:
    """What must match between the env's and MCP's schema (the SDK may add titles, defaults)."""
    keep = ("type", "description", "minimum")
    return {"type": schema["type"], "required": sorted(schema.get("required", [])),
            "properties": {k: {f: v[f] for f in keep if f in v} for k, v in schema["properties"].items()}}  # fmt: skip


def text_of(result) -> str:
    assert len(result.content) == 1 and result.content[0].type == "text"
    return result.content[0].text


async def calls(client: Client, plan: list[tuple[str, dict]], **kw) -> list:
    return [await client.call_tool(name, args, **kw) for name, args in plan]


def test_in_process_tools_answer_as_the_env(service, saved_world, query):
    fresh = WorldService.open(saved_world)
    env_search = fresh.search(query, session="ref", seed=0)
    url = env_search["results"][0]["url"]
    env_open = fresh.open_url(url, session="ref", seed=0)
    env_page2 = fresh.search(query, 2, session="ref", seed=0)

    async def main():
        async with Client(build_mcp_server(service)) as client:
            listed = {t.name: t for t in (await client.list_tools()).tools}
            assert set(listed) == {"search", "open"}
            for name, tool in listed.items():
                env = TOOLS[name]["function"]
                assert tool.description == env["description"]
                assert schema_view(tool.input_schema) == schema_view(env["parameters"])
            assert listed["search"].input_schema["properties"]["page"]["minimum"] == 1

            found = await client.call_tool("search", {"query": query})
            assert not found.is_error and text_of(found) == env_search["text"] and query in text_of(found)
            assert found.structured_content["status"] == "ok"
            assert found.structured_content["results"][0]["url"] == url
            page = await client.call_tool("open", {"url": url})
            assert not page.is_error and text_of(page) == env_open["text"]
            assert page.structured_content["page"]["url"] == url
            page2 = await client.call_tool("search", {"query": query, "page": 2})
            assert text_of(page2) == env_page2["text"] and text_of(page2) != env_search["text"]

            bad = await client.call_tool("open", {"url": "not a url"})
            assert bad.is_error and text_of(bad).startswith("Error: malformed URL")
            assert text_of(bad) == fresh.open_url("not a url")["text"] and "\n" not in text_of(bad)
            low = await client.call_tool("search", {"query": query, "page": 0})
            assert low.is_error and text_of(low) == "Error: page must be between 1 and 100, not 0"
            long = await client.call_tool("search", {"query": "x" * 1001})
            assert long.is_error and "1,001 characters" in text_of(long) and "\n" not in text_of(long)
            long_url = await client.call_tool("open", {"url": "https://a.org/" + "x" * 2000})
            assert long_url.is_error and "at most 2,000" in text_of(long_url)

            missing = "https://en.fictopedia.org/wiki/No_Such_Page_Here"
            gone = await client.call_tool("open", {"url": missing})
            assert not gone.is_error and text_of(gone).startswith("Error 404")
            assert text_of(gone) == fresh.open_url(missing)["text"]
            assert gone.structured_content["status"] == "not_found"

    anyio.run(main)


@pytest.mark.cli
def test_over_stdio(saved_world, service, query):
    params = StdioServerParameters(command=sys.executable, args=[*CLI[1:], str(saved_world), "--transport", "stdio"],
                                   cwd=str(ROOT))  # fmt: skip

    async def main():
        async with Client(stdio_client(params)) as client:  # (mcp 2.0's Client takes no parameters)
            names = {t.name for t in (await client.list_tools()).tools}
            assert names == {"search", "open"}
            result = await client.call_tool("search", {"query": query})
            assert not result.is_error and text_of(result) == service.search(query)["text"]
            assert query in text_of(result)

    anyio.run(main)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_http(saved_world, *args: str) -> tuple[subprocess.Popen, str]:
    """``fictionworld mcp DIR --transport streamable-http --port P [args]``, and the URL it
    prints once it listens."""
    port = str(free_port())
    proc = subprocess.Popen([*CLI, str(saved_world), "--transport", "streamable-http", "--port", port, *args],
                            cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)  # fmt: skip
    first: list[str] = []
    reader = threading.Thread(target=lambda: first.append(proc.stderr.readline()), daemon=True)
    reader.start()
    reader.join(60)
    line = first[0] if first else ""
    if f"http://127.0.0.1:{port}/mcp " not in line:
        proc.kill()
        pytest.fail(f"no address printed: {line!r}")
    return proc, f"http://127.0.0.1:{port}/mcp"


@pytest.mark.cli
def test_over_streamable_http(saved_world, service, query):
    proc, url = start_http(saved_world)
    try:

        async def main():
            async with Client(url) as client:  # the 2026-07-28 protocol: stateless
                result = await client.call_tool("search", {"query": query})
                assert not result.is_error and text_of(result) == service.search(query)["text"]
            # handshake-era connections carry a session id each: each counts its own calls
            sessions = []
            for _ in range(2):
                async with Client(url, mode="legacy") as client:
                    got = await calls(client, [("search", {"query": query}), ("open", {"url": "https://a.org/x"})])
                    sessions.append([r.structured_content for r in got])
            (a0, a1), (b0, b1) = sessions
            assert [a0["call"], a1["call"], b0["call"], b1["call"]] == [0, 1, 0, 1]
            assert a0["session"] == a1["session"] != b0["session"] == b1["session"]
            assert a0["text"] == b0["text"] == service.search(query)["text"]

        anyio.run(main)
    finally:
        stop(proc)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr.read()


def stop(proc: subprocess.Popen) -> None:
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


HANDSHAKE = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}  # fmt: skip


@pytest.mark.cli
def test_streamable_http_sessions_are_capped_and_freed_when_idle(saved_world):
    """Handshake-era sessions (raw initialize calls, as a client that never ends its session
    makes them): at most --max-sessions at once (the next is refused 503, saying why), a DELETE
    gives a place back, and a session is freed --session-idle seconds after its last request
    (before, the SDK kept every session until its client ended it)."""
    proc, url = start_http(saved_world, "--max-sessions", "3", "--session-idle", "4")
    try:

        def initialize() -> httpx.Response:
            return httpx.post(url, json=INITIALIZE, headers=HANDSHAKE, timeout=20)

        def ping(session: str) -> int:
            headers = HANDSHAKE | {"mcp-session-id": session, "mcp-protocol-version": "2025-06-18"}
            return httpx.post(url, json={"jsonrpc": "2.0", "id": 2, "method": "ping"}, headers=headers,
                              timeout=20).status_code  # fmt: skip

        opened = [initialize() for _ in range(3)]
        assert [r.status_code for r in opened] == [200] * 3
        a, b, c = (r.headers["mcp-session-id"] for r in opened)
        over = initialize()
        assert over.status_code == 503 and over.headers["retry-after"] == "1", over.text
        assert "too many MCP sessions open" in over.json()["error"]["message"]
        gone = httpx.delete(url, headers=HANDSHAKE | {"mcp-session-id": a, "mcp-protocol-version": "2025-06-18"},
                            timeout=20)  # fmt: skip
        assert gone.status_code == 200 and initialize().status_code == 200  # a DELETE gave its place back
        time.sleep(2)
        assert ping(b) == 200  # in use: kept
        time.sleep(2.5)  # c idle for 4.5 s, b for 2.5 s
        assert ping(c) == 404 and ping(b) == 200
        assert initialize().status_code == 200  # c's place is free again
    finally:
        stop(proc)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr.read()


def test_faults_replay_per_session(saved_world, query):
    """Each fresh MCP session draws its faults as an env episode seeded 0 does, in call order."""
    faulty = WorldService.open(saved_world, knobs=Knobs(fault_rate=0.5))
    plan = [("search", {"query": query}), ("open", {"url": "https://a.org/x"})] * 6
    ref = WorldService.open(saved_world, knobs=Knobs(fault_rate=0.5))
    expected = [ref.search(a["query"], session="ref", seed=0)["text"] if n == "search"
                else ref.open_url(a["url"], session="ref", seed=0)["text"] for n, a in plan]  # fmt: skip

    async def session(server, **kw) -> list:
        async with Client(server) as client:
            return await calls(client, plan, **kw)

    async def main():
        runs = [await session(build_mcp_server(faulty)) for _ in range(2)]
        texts = [[text_of(r) for r in run] for run in runs]
        assert texts[0] == texts[1] == expected
        faults = [r.structured_content["fault"] for r in runs[0]]
        assert any(faults) and not all(faults)
        assert {t for t in texts[0] if t in FAULT_TEXT.values()} and not any(r.is_error for r in runs[0])
        assert [r.structured_content["call"] for r in runs[1]] == list(range(len(plan)))

        # a session named in _meta, with its seed, replays on any server
        meta = {SESSION_META: "episode-7", SEED_META: 7}
        named = [text_of(r) for r in await session(build_mcp_server(faulty), meta=meta)]
        seven = WorldService.open(saved_world, knobs=Knobs(fault_rate=0.5))
        assert named == [text_of(r) for r in await session(build_mcp_server(seven), meta=meta)]
        assert named != texts[0]
        async with Client(build_mcp_server(faulty)) as client:
            refused = await client.call_tool("search", {"query": query}, meta={SESSION_META: "e", SEED_META: -1})
            assert refused.is_error and SEED_META in text_of(refused)

    anyio.run(main)


def test_mcp_is_not_imported_by_fictionworld():
    code = "import sys, fictionworld, fictionworld.env.service, fictionworld.cli; print('mcp' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                         env={**os.environ, "PYTHONWARNINGS": "ignore"})  # fmt: skip
    assert out.returncode == 0 and out.stdout.strip() == "False", out.stderr
