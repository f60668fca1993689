"""Nothing but what an agent reads leaves the process: every surface an agent (or its trainer) is
served from is walked, and any field beyond url, title, site, date, text and paging for a page
(and rank, url, title, snippet, date and score for a search result) fails. The graph's labels
(kind, credibility, entity ids, fact ids, the facts a page contradicts) would let a one-line rule
drop every lying, confusable and distractor page. Surfaces: the env's observations and info,
the world service in process, HTTP ``/search`` ``/open`` ``/retrieve`` live on 127.0.0.1, the MCP
tools through the MCP SDK's own client, Ray Serve (marked ``ray``), and the trainer adapters'
tool outputs (verl, TRL, SkyRL, verifiers). Labels go out only from a service opened with
``eval_labels``, under ``labels``."""

from __future__ import annotations

import asyncio
import re
import socket
import threading
import time
from contextlib import contextmanager

import httpx
import numpy as np
import pytest

from fictionworld.env import EnvConfig, SearchEnv
from fictionworld.env.service import WorldService
from fictionworld.knobs import Knobs
from fictionworld.tables import TYPE_NAMES
from fictionworld.tasks.generate import generate_tasks
from fictionworld.web.pages import LAYERS, PAGE_KINDS

# What an agent may be sent: the list, written out here (not read from the code under test).
PAGE = dict.fromkeys(("url", "title", "site", "date", "text", "page_number", "page_count"))
RESULT = dict.fromkeys(("rank", "url", "title", "snippet", "date", "score"))
DOC = dict.fromkeys(("id", "contents", "url", "title", "date"))
SESSION = dict.fromkeys(("status", "text", "fault", "session", "call"))
SEARCH = SESSION | {"results": [RESULT]}
OPEN = SESSION | {"page": PAGE}
RETRIEVE = {"result": [[{"document": DOC, "score": None}]]}
RETRIEVE_BARE = {"result": [[DOC]]}
MCP_META = {"io.modelcontextprotocol/serverInfo": dict.fromkeys(("name", "version"))}  # (the SDK's own)
LABELS = ("kind", "credibility", "entity_ids", "fact_ids", "contradicts", "layer", "labels")
# Every page layer visible, so that the walk opens lying, confusable and distractor pages too.
KNOBS = Knobs(distractor_rate=1.0, confusable_rate=1.0, conflict_rate=1.0)


def outside(value, shape, where: str = "$") -> list[str]:
    """Where ``value`` holds a field that ``shape`` does not allow (a dict: field -> shape of its
    value; a one-item list: the shape of every item; None: a leaf, a string, number or null)."""
    if shape is None:
        return [] if value is None or isinstance(value, str | int | float | bool) else [f"{where}: not a leaf"]
    if isinstance(shape, list):
        if not isinstance(value, list):
            return [f"{where}: not a list"]
        return [p for i, v in enumerate(value) for p in outside(v, shape[0], f"{where}[{i}]")]
    if value is None:
        return []  # (a page not found: "page": null)
    if not isinstance(value, dict):
        return [f"{where}: not an object"]
    out = [f"{where}.{k}" for k in value if k not in shape]
    return out + [p for k, v in value.items() if k in shape for p in outside(v, shape[k], f"{where}.{k}")]


@pytest.fixture(scope="module")
def service(saved_world) -> WorldService:
    return WorldService.open(saved_world, knobs=KNOBS)


@pytest.fixture(scope="module")
def calls(world):
    """The requests every surface is walked with: searches that find pages of every layer, and
    pages to open: an article, a page of each perturbation layer, a directory's second page, a
    URL that names no page."""
    pages = world.web.pages
    rows = [int(np.flatnonzero(pages.layer == LAYERS.index(layer))[0]) for layer in LAYERS]
    urls = [pages.urls[r] for r in rows]
    listing = pages.urls[int(np.flatnonzero(pages.kind_code == PAGE_KINDS.index("list"))[0])]
    urls += [listing + "?page=2", "https://en.fictopedia.org/wiki/No_Such_Page_Here"]
    queries = [str(world.entities.name[5])] + [pages.titles[r] for r in rows[1:]]  # each layer's pages found
    return {"queries": queries, "urls": urls}


def entity_ids_in(world, text: str) -> list[str]:
    """Graph entity ids ("person:42") in ``text``."""
    return re.findall(rf"\b(?:{'|'.join(TYPE_NAMES)}):\d+\b", text)


def test_walk_finds_labels_in_a_page_as_the_model_holds_it(world, service, calls):
    """The walk itself: a page dumped whole, as the service sent it before, fails it."""
    page = world.web.open(calls["urls"][1], KNOBS)
    assert set(outside({"page": page.model_dump(mode="json")}, {"page": PAGE})) >= {
        "$.page.credibility", "$.page.fact_ids", "$.page.contradicts", "$.page.entity_ids", "$.page.kind"}  # fmt: skip


def test_the_service_in_process(service, calls, world):
    for q in calls["queries"]:
        got = service.search(q, session="walk", seed=0)
        assert got["results"] and outside(got, SEARCH) == []
    for url in calls["urls"]:
        got = service.open_url(url, session="walk", seed=0)
        assert outside(got, OPEN) == [] and entity_ids_in(world, str(got)) == []
    docs = service.retrieve(calls["queries"], 5, True)
    assert outside({"result": docs}, RETRIEVE) == [] and outside({"result": service.retrieve(calls["queries"])},
                                                                 RETRIEVE_BARE) == []  # fmt: skip
    # a passage's id is its URL, not the page's row (the layers are rendered after the web)
    assert all(d["document"]["id"] == d["document"]["url"] for ds in docs for d in ds)
    assert service.info()["eval_labels"] is False


def test_labels_only_behind_the_evaluation_flag(saved_world, calls, world):
    labelled = WorldService.open(saved_world, knobs=KNOBS, eval_labels=True)
    page = labelled.open_url(calls["urls"][1])["page"]
    truth = world.web.open(calls["urls"][1], KNOBS)
    assert page["labels"] == {"kind": truth.kind, "credibility": truth.credibility,
                              "entity_ids": list(truth.entity_ids), "fact_ids": list(truth.fact_ids),
                              "contradicts": list(truth.contradicts)}  # fmt: skip
    assert truth.credibility == "low" and outside(page, PAGE) == ["$.labels"]
    assert all("labels" in r for r in labelled.search(calls["queries"][0])["results"])


def test_the_envs_observations_and_info(world, calls):
    env = SearchEnv(world.web, EnvConfig(tools="all", knobs=KNOBS))
    task = generate_tasks(world, 1, kind="wide", seed=1)[0]
    _, info = env.reset(task, seed=0)
    assert set(info) == {"task_id", "seed", "knobs", "tools", "max_turns"}
    actions = [{"name": "search", "arguments": {"query": q}} for q in calls["queries"]]
    actions += [{"name": "web_search", "arguments": {"queries": calls["queries"]}}]
    actions += [{"name": n, "arguments": {"url": u}} for u in calls["urls"] for n in ("open", "web_extractor")]
    for action in actions:
        obs, _, _, _, info = env.step({"role": "assistant", "content": None, "tool_calls": [{"function": action}]})
        assert [set(m) for m in obs] == [{"role", "tool_call_id", "name", "content"}]
        assert set(info) == {"turn", "calls"} and not set(info["calls"][0]) & set(LABELS)
        assert entity_ids_in(world, obs[0]["content"]) == []
        assert not any(f"{label}:" in obs[0]["content"].lower() for label in ("credibility", "contradicts"))


@contextmanager
def http_server(service):
    """The HTTP app (as ``fictionworld serve`` builds it) under uvicorn on 127.0.0.1, in a thread."""
    import uvicorn

    from fictionworld.integrations.http import create_app
    from fictionworld.integrations.server import bind

    sock = bind("127.0.0.1", 0)
    server = uvicorn.Server(uvicorn.Config(create_app(service), log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert time.monotonic() < deadline and thread.is_alive(), "the server did not start"
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(30)
        sock.close()


def walk_http(base: str, calls: dict, world) -> None:
    with httpx.Client(base_url=base, timeout=30) as client:
        for q in calls["queries"]:
            r = client.post("/search", json={"query": q, "session": "walk"})
            assert r.status_code == 200 and r.json()["results"] and outside(r.json(), SEARCH) == [], r.text
        for url in calls["urls"]:
            r = client.post("/open", json={"url": url, "session": "walk"})
            assert r.status_code == 200 and outside(r.json(), OPEN) == [], r.text
            assert entity_ids_in(world, r.text) == []
        r = client.post("/retrieve", json={"queries": calls["queries"], "topk": 5, "return_scores": True})
        assert r.status_code == 200 and outside(r.json(), RETRIEVE) == [], r.text
        r = client.post("/retrieve", json={"query": calls["queries"][0]})
        assert r.status_code == 200 and outside(r.json(), RETRIEVE_BARE) == [], r.text


def test_http_live(service, calls, world):
    with http_server(service) as base:
        walk_http(base, calls, world)


def test_mcp_through_the_sdks_client(service, calls, world):
    pytest.importorskip("mcp")
    from mcp import Client

    from fictionworld.integrations.mcp import build_mcp_server

    async def main():
        async with Client(build_mcp_server(service)) as client:
            plan = [("search", {"query": q}, SEARCH) for q in calls["queries"]]
            plan += [("open", {"url": u}, OPEN) for u in calls["urls"]]
            for name, args, shape in plan:
                result = await client.call_tool(name, args)
                assert [c.type for c in result.content] == ["text"] and outside(result.meta, MCP_META) == []
                assert entity_ids_in(world, result.content[0].text) == []
                if not result.is_error:
                    assert outside(result.structured_content, shape) == [], (name, args)

    asyncio.run(main())


def test_trainer_adapters_tool_outputs(world, saved_world, calls, tmp_path):
    """What each adapter hands its trainer for a tool call: text, nothing beside it."""
    from fictionworld.env.trainer import Episode, task_json

    task = generate_tasks(world, 1, kind="wide", seed=1)[0]
    knobs = KNOBS.model_dump(mode="json")
    plan = [("search", {"query": q}) for q in calls["queries"]] + [("open", {"url": u}) for u in calls["urls"]]
    episode = Episode(world.web, task, seed=0, knobs=knobs)
    for name, args in plan:
        assert isinstance(episode.call(name, args), str)
    checked = []
    if _has("verl"):
        from verl.experimental.agent_loop.tool_agent_loop import AgentData

        from fictionworld.integrations import verl as fv

        tools = {n: fv.FictionWorldTool({"name": n}) for n in ("search", "open")}
        kwargs = {"world_dir": str(saved_world), "task": task_json(task), "seed": 0, "knobs": knobs}
        agent = AgentData(messages=[], image_data=None, video_data=None, audio_data=None, mm_processor_kwargs=None,
                          metrics={}, request_id="walk", tools_kwargs={})  # fmt: skip

        async def run():
            for name, args in plan:
                instance, _ = await tools[name].create(create_kwargs=kwargs)
                response, reward, metrics = await tools[name].execute(instance, args, agent_data=agent)
                assert response.model_dump(exclude_none=True).keys() == {"text"} and metrics == {}

        asyncio.run(run())
        checked.append("verl")
    if _has("trl"):
        from fictionworld.integrations.trl import FictionWorldEnv, dataset_row

        env = FictionWorldEnv()
        env.reset(**dataset_row(task, saved_world, knobs=knobs))
        assert all(isinstance(getattr(env, name)(**args), str) for name, args in plan)
        checked.append("trl")
    if _has("skyrl_gym"):
        from fictionworld.integrations.skyrl import FictionWorldTextEnv

        env = FictionWorldTextEnv(extras={"extra_info": {"world": str(saved_world), "task": task_json(task),
                                                          "knobs": knobs}})  # fmt: skip
        for name, args in plan:
            out = env.step(f"<{name}>{next(iter(args.values()))}</{name}>")
            assert [set(m) for m in out["observations"]] == [{"role", "content"}]
            assert set(out["metadata"]) == {"turn", "calls"} and not set(out["metadata"]["calls"][0]) & set(LABELS)
        checked.append("skyrl")
    if _has("verifiers"):
        from fictionworld.integrations.verifiers import FictionWorldToolset, FictionWorldToolsetConfig

        toolset = FictionWorldToolset(FictionWorldToolsetConfig(world=str(saved_world)))
        asyncio.run(toolset.setup())
        assert all(isinstance(getattr(toolset, name)(**args), str) for name, args in plan)
        checked.append("verifiers")
    assert checked  # (each adapter is checked where its trainer is installed; CI installs them all)


def _has(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


@pytest.mark.ray
def test_ray_serve_live(saved_world, calls, world):
    serve = pytest.importorskip("ray.serve", reason="ray[serve] is not installed")
    from conftest import shared_ray

    from fictionworld.integrations.ray_serve import deploy

    shared_ray()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    try:
        serve.start(http_options={"host": "127.0.0.1", "port": port},
                    logging_config={"log_level": "WARNING", "enable_access_log": False})  # fmt: skip
        deploy(saved_world, replicas=1, knobs=KNOBS, name="walk")
        walk_http(f"http://127.0.0.1:{port}", calls, world)
    finally:
        serve.shutdown()
