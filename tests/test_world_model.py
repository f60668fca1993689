"""The LLM world model on SGLang, against a scripted local HTTP server (not a model): every
bad reply is caught, retried with feedback, then replaced by the template page; one stored
page per URL across processes; nothing hangs."""

from __future__ import annotations

import json
import logging
import re
import threading
import time

import pytest
from profiles import sampled
from wm_helpers import Script, is_search, requested_url, restyled, results_json, wrap

from fictionworld.surface import find_dates, format_date
from fictionworld.testing.scripted_openai import Reply, ScriptedOpenAIServer
from fictionworld.web import Web
from fictionworld.web.perturb import confusable_name
from fictionworld.worldmodel.cache import RenderCache
from fictionworld.worldmodel.prompts import SYSTEM
from fictionworld.worldmodel.sglang import SGLangWorldModel
from fictionworld.worldmodel.verify import Verifier


@pytest.fixture
def web(world):
    """A Web of the session world that a test may give its own world model."""
    w = world.web
    web = Web(world, w.pages, w.index)
    yield web
    close = getattr(web.model, "close", None)
    if close is not None:  # its event-loop thread and connections go with the test
        close()


@pytest.fixture(scope="module")
def person_row(world):
    """The article of a person with a birth date and a linked place of birth."""
    w = world.web
    for row in range(len(w.pages)):
        if w.pages.kind[row] != "article" or world.entities.type_of(int(w.pages.entity[row])) != "person":
            continue
        text = w.pages.text(row)
        if find_dates(text) and "born in" in text.lower() and "](https://" in text:
            return row
    raise AssertionError("no suitable person article")


def model(web, url, **kw) -> SGLangWorldModel:
    kw = {"cache": RenderCache(None), "timeout": 5.0, "retries": 0, "max_attempts": 3} | kw
    m = SGLangWorldModel(web, url, "scripted", **kw)
    web.model = m
    return m


def open_text(web, row) -> str:
    return web.open(web.pages.urls[row]).text


# -- verification --------------------------------------------------------------------------
def test_template_pages_pass_verification_and_perturbations_do_not(world):
    """Acceptance: the template renderer's own authoritative pages pass 100 %; the perturbation
    layers (wrong values, fake profiles, near-miss pages) are caught."""
    web = world.web
    v = Verifier(web)
    failed, flagged, counts = [], {1: 0, 2: 0, 3: 0}, {1: 0, 2: 0, 3: 0}
    for row in sampled(range(len(web.pages))):
        verdict = v.verify_page(v.grounding(row), web.pages.page(row, web.entity_ids).markdown())
        layer = int(web.pages.layer[row])
        if layer == 0 and not verdict.ok:
            failed.append((web.pages.urls[row], verdict.feedback()))
        elif layer:
            counts[layer] += 1
            flagged[layer] += not verdict.ok
    assert not failed, failed[:3]
    assert sum(web.pages.layer == 0) > 4_000
    assert flagged[2] == counts[2] and flagged[1] == counts[1]  # fake profiles, near-miss pages
    assert flagged[3] >= 0.98 * counts[3]  # conflicting forum and blog posts


def test_verifier_names_each_kind_of_error(world, person_row):
    web = world.web
    v = Verifier(web)
    g = v.grounding(person_row)
    page = web.pages.page(person_row, web.entity_ids).markdown()
    assert v.verify_page(g, restyled(page)).ok
    # an omitted fact
    sentence = next(s for s in re.split(r"(?<=\.) ", page) if "born in" in s.lower())
    verdict = v.verify_page(g, page.replace(sentence, ""))
    assert verdict.count("missing") >= 1 and not verdict.ok
    # a contradicted date
    d, span = find_dates(web.pages.text(person_row))[0]
    wrong = d.replace(year=d.year - 7)
    verdict = v.verify_page(g, page.replace(span, format_date(wrong)))
    assert verdict.count("contradiction") + verdict.count("unsupported") >= 1
    assert verdict.count("missing") >= 1
    # an invented namesake
    import random

    name = world.entities.name[int(web.pages.entity[person_row])]
    twin = confusable_name(name, random.Random(3), set(world.entities.name.tolist()))
    verdict = v.verify_page(g, page + f"\n\nThe rival {twin} is often mentioned alongside.")
    assert verdict.count("namesake") == 1, verdict.problems
    # an unrelated real entity, and a link to nowhere
    other = next(n for i, n in enumerate(world.entities.name.tolist()) if i not in g.entities and " " in n)
    verdict = v.verify_page(g, page + f"\n\nA friend of {other}.")
    assert verdict.count("unrelated") == 1
    verdict = v.verify_page(g, page + "\n\n[More](https://en.fictopedia.org/wiki/No_Such_Page_Here)")
    assert verdict.count("bad_link") == 1


# -- serving -------------------------------------------------------------------------------
def test_faithful_pages_are_served_verified_and_stored_once(web, person_row):
    script = Script(web)
    with ScriptedOpenAIServer(script) as srv:
        m = model(web, srv.base_url)
        text = open_text(web, person_row)
        assert text.startswith("Here is what the encyclopedia records.")  # the LLM's page, not the template
        assert open_text(web, person_row) == text and len(srv.requests) == 1  # stored: asked once
        req = srv.requests[0]
        assert req["messages"][0] == {"role": "system", "content": SYSTEM}  # static part first
        assert (req["temperature"], req["top_p"], req["top_k"]) == (0.6, 0.95, 20)
        prompt = req["messages"][-1]["content"]
        assert web.pages.urls[person_row] in prompt and "Facts to state" in prompt
        results = web.search(web.pages.titles[person_row])
        assert results[0].snippet == f"Read about {results[0].title} on this page."
        search_req = next(r for r in srv.requests if is_search(r))
        assert search_req["response_format"]["json_schema"]["schema"]["required"] == ["results"]
        assert m.cache.counts() == {"llm": 1 + sum(web.pages.kind[web.pages.row_of_url[r.url]] in m.kinds
                                                   for r in results)}  # fmt: skip
    s = m.stats.summary()
    assert s["first_try_pass_rate"] == 1.0 and s["fallbacks"] == 0 and s["facts_covered"] == 1.0


def _bad_pages(kind, world, web, person_row):
    page = web.pages.text(person_row)
    if kind == "omits a fact":
        sentence = next(s for s in re.split(r"(?<=\.) ", page) if "born in" in s.lower())
        return wrap(page.replace(sentence, "")), "missing"
    if kind == "contradicts a date":
        d, span = find_dates(page)[0]
        return wrap(page.replace(span, format_date(d.replace(year=d.year - 7)))), "contradiction|unsupported"
    import random

    name = world.entities.name[int(web.pages.entity[person_row])]
    twin = confusable_name(name, random.Random(5), set(world.entities.name.tolist()))
    return wrap(page + f"\n\nNot to be confused with {twin}."), "namesake"


@pytest.mark.parametrize("kind", ["omits a fact", "contradicts a date", "invents a namesake"])
def test_a_bad_page_is_retried_with_feedback_then_replaced_by_the_template(world, web, person_row, kind):
    bad, problem = _bad_pages(kind, world, web, person_row)
    with ScriptedOpenAIServer(lambda req: bad) as srv:
        m = model(web, srv.base_url, max_attempts=3)
        page = web.open(web.pages.urls[person_row])
        assert page.text == web.pages.text(person_row)  # the template page
        assert len(srv.requests) == 3  # first try + two retries
        feedback = srv.requests[1]["messages"][-1]["content"]
        assert "failed the check" in feedback and re.search(problem, feedback)
        shown = {"role": "assistant", "content": bad.split("</think>\n", 1)[1]}  # thinking is not sent back
        assert srv.requests[1]["messages"][-2] == shown
    s = m.stats.summary()
    assert s["fallbacks"] == 1 and s["first_try_pass_rate"] == 0.0 and s["rendered"] == 1
    assert m.cache.counts() == {"fallback": 1}  # the failure is stored too: the URL stays stable


def test_stored_pages_are_kept_apart_by_the_template_renderer_version(web, person_row, monkeypatch):
    """A page that failed verification is stored as the template's text: a new template renderer
    (render.RENDERER) must not serve the old one from the cache."""
    import fictionworld.worldmodel.sglang as sg

    cache = RenderCache(None)
    with ScriptedOpenAIServer(lambda req: "not a page") as srv:
        model(web, srv.base_url, cache=cache, max_attempts=1)
        web.open(web.pages.urls[person_row])
        assert cache.counts() == {"fallback": 1}
        monkeypatch.setattr(sg, "RENDERER", "template-v999")
        again = model(web, srv.base_url, cache=cache, max_attempts=1)
        web.open(web.pages.urls[person_row])
    assert again.stats.summary()["cache_hits"] == 0 and cache.counts() == {"fallback": 2}


def test_a_bad_first_page_then_a_good_one_is_served(world, web, person_row):
    bad, _ = _bad_pages("contradicts a date", world, web, person_row)
    good = wrap(restyled(web.pages.text(person_row)))
    with ScriptedOpenAIServer([bad, good]) as srv:
        m = model(web, srv.base_url)
        assert open_text(web, person_row).startswith("Here is what")
        assert len(srv.requests) == 2
    assert m.stats.after_retry == 1 and m.stats.problems["contradiction"] + m.stats.problems["unsupported"] >= 1


def test_malformed_json_results_are_retried_then_replaced(web, person_row):
    query = web.pages.titles[person_row]
    template = [r.snippet for r in web.search(query)]
    replies = ['{"results": [{"url": "https://en.fictopedia.org/wiki/', "not json at all", '```json\n{"results": 3}```']
    with ScriptedOpenAIServer(replies) as srv:
        m = model(web, srv.base_url)
        assert [r.snippet for r in web.search(query)] == template
        assert len(srv.requests) == 3
        assert "not JSON of the schema" in srv.requests[1]["messages"][-1]["content"]
    assert m.stats.problems["format"] > 0 and m.stats.fallbacks > 0


def test_a_snippet_that_gives_values_away_is_caught(web, person_row):
    query = web.pages.titles[person_row]
    d, _ = find_dates(web.pages.text(person_row))[0]
    leaky = lambda req, n: results_json(req, "{t}: " + format_date(d))  # noqa: E731
    with ScriptedOpenAIServer(Script(web, results=leaky)) as srv:
        m = model(web, srv.base_url, max_attempts=2)
        web.search(query)
        assert m.stats.problems["leak"] > 0 and m.stats.fallbacks > 0
        assert "tease" in srv.requests[0]["messages"][0]["content"]


@pytest.mark.parametrize("failure", ["HTTP 500", "slow reply", "server down"])
def test_an_unusable_server_falls_back_fast_and_says_so(web, person_row, failure, caplog):
    replies = {"HTTP 500": [Reply(status=500)], "slow reply": [Reply("x", delay=3.0)]}.get(failure)
    caplog.set_level(logging.WARNING, logger="fictionworld.worldmodel")
    done = {}

    def run(url):
        m = model(web, url, timeout=0.5, retries=1)
        done["first"] = open_text(web, person_row)
        done["second"] = open_text(web, person_row)  # within the cooldown: no request at all
        done["stats"] = m.stats.summary()

    if replies is None:
        import socket

        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.close()  # nothing listens there now
        t = threading.Thread(target=run, args=(f"http://127.0.0.1:{port}/v1",))
        t.start()
        t.join(30)
        n_requests = 0
    else:
        with ScriptedOpenAIServer(replies) as srv:
            t = threading.Thread(target=run, args=(srv.base_url,))
            t.start()
            t.join(30)
            n_requests = len(srv.requests)
    assert not t.is_alive(), "the world model hung"
    assert done["first"] == done["second"] == web.pages.text(person_row)
    if replies is not None:
        assert n_requests == 2  # one try and one retry, then the cooldown
    assert done["stats"]["unreachable"] >= 2 and done["stats"]["rendered"] == 0
    assert any("unreachable" in r.getMessage() for r in caplog.records)


def test_native_generate_api(web, person_row):
    script = Script(web)
    with ScriptedOpenAIServer(script) as srv:
        m = model(web, srv.base_url, api="generate")
        assert open_text(web, person_row).startswith("Here is what")
        web.search(web.pages.titles[person_row])
        assert all(p == "/generate" for p in srv.paths)
        page_req = srv.requests[0]
        assert page_req["text"].startswith("<|im_start|>system\nYou are a Tool World Model")
        assert page_req["text"].endswith("<|im_start|>assistant\n")
        search_req = next(r for r in srv.requests if is_search(r))
        assert json.loads(search_req["sampling_params"]["json_schema"])["required"] == ["results"]
    assert m.stats.first_try == m.stats.rendered > 1


def _loop_threads() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if t.name == "fictionworld-world-model"}


def test_closing_a_model_stops_its_loop_thread_and_the_next_render_starts_one(web, person_row):
    """A closed model leaves no thread or open loop behind; rendering again starts them again."""
    before = _loop_threads()
    with ScriptedOpenAIServer(Script(web)) as srv:
        with model(web, srv.base_url) as m:
            open_text(web, person_row)
            (thread,) = _loop_threads() - before
            loop = m._loop
            assert thread.is_alive() and loop.is_running()
        assert not thread.is_alive() and loop.is_closed() and _loop_threads() == before
        web.search(web.pages.titles[person_row])  # results not stored yet: a render, on a new loop
        (again,) = _loop_threads() - before
        assert again is not thread and len(srv.requests) > 1
        m.close()
        m.close()  # twice is fine
        assert not again.is_alive() and _loop_threads() == before


def test_a_collected_model_stops_its_loop_thread(web, person_row):
    import gc

    before = _loop_threads()
    with ScriptedOpenAIServer(Script(web)) as srv:
        model(web, srv.base_url)
        open_text(web, person_row)
        (thread,) = _loop_threads() - before
        web.model = None  # the last reference
        gc.collect()
        thread.join(15)
        assert not thread.is_alive() and _loop_threads() == before


EXIT_SCRIPT = """
import sys, threading
import fictionworld as fw
from fictionworld.worldmodel import sglang
from fictionworld.worldmodel.cache import RenderCache

original = sglang._stop_loop
def spy(loop, thread, client, *a):
    original(loop, thread, client, *a)
    print(f"stopped: thread alive {thread.is_alive()}, loop closed {loop.is_closed()}", flush=True)
sglang._stop_loop = spy
world = fw.generate(seed=5, entities=50)
m = sglang.SGLangWorldModel(world.web, sys.argv[1], "scripted", cache=RenderCache(None), timeout=2.0,
                            retries=0, max_attempts=1)
world.web.model = m
row = next(r for r in range(len(world.web.pages)) if world.web.pages.kind[r] in m.kinds)
world.web.open(world.web.pages.urls[row])
print("loop threads:", sum(t.name == "fictionworld-world-model" for t in threading.enumerate()), flush=True)
"""


def test_a_model_never_closed_stops_its_loop_thread_at_exit():
    """A daemon thread left running its event loop (and HTTP connections) into the interpreter's
    finalization can crash it: the model stops it at exit."""
    import socket
    import subprocess
    import sys

    with socket.socket() as s:  # a port nothing listens on: the render fails fast, the loop runs anyway
        s.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{s.getsockname()[1]}/v1"
    r = subprocess.run([sys.executable, "-c", EXIT_SCRIPT, url], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["loop threads: 1", "stopped: thread alive False, loop closed True"], r.stdout


def test_a_page_prompt_carries_the_snippets_already_shown(web, person_row):
    with ScriptedOpenAIServer(Script(web)) as srv:
        model(web, srv.base_url)
        web.search(web.pages.titles[person_row])
        open_text(web, person_row)
        page_req = next(r for r in srv.requests if requested_url(r) and not is_search(r))
        turns = page_req["messages"]
        assert turns[1]["content"].startswith("### Turn 1\n**Action:**") and '"tool": "search"' in turns[1]["content"]
        assert turns[2]["content"].startswith("**Environment Observation:**\nRead about")


# -- consistency across processes -----------------------------------------------------------
def _render_in_process(world_dir: str, base_url: str, urls: list[str], q) -> None:
    import fictionworld as fw
    from fictionworld.worldmodel.config import WorldModelConfig, use_world_model

    world = fw.World.load(world_dir)
    use_world_model(world.web, WorldModelConfig(kind="sglang", base_url=base_url, model="scripted", timeout=10))
    q.put({u: world.web.open(u).text for u in urls})


@pytest.mark.cli
def test_concurrent_processes_see_one_stored_page_per_url(saved_world, tmp_path, world):
    """Three processes render the same pages at once; the scripted server words each reply
    differently, so any disagreement would show. All serve the first stored page."""
    import multiprocessing as mp
    import shutil

    d = tmp_path / "w"
    shutil.copytree(saved_world, d)
    rows = [r for r in range(len(world.web.pages)) if world.web.pages.kind[r] == "article"][:6]
    urls = [world.web.pages.urls[r] for r in rows]
    lock = threading.Lock()
    count = [0]

    def reply(req):
        with lock:
            count[0] += 1
            k = count[0]
        text = world.web.pages.text(world.web.pages.row_of_url[requested_url(req)])
        time.sleep(0.05)
        return wrap(f"Edition {'ABCDEFGHIJKLMNOPQRSTUVWXYZ'[k % 26]} of this article.\n\n{text}")

    ctx = mp.get_context("spawn")
    with ScriptedOpenAIServer(reply) as srv:
        q = ctx.Queue()
        procs = [ctx.Process(target=_render_in_process, args=(str(d), srv.base_url, urls, q)) for _ in range(3)]
        for p in procs:
            p.start()
        seen = [q.get(timeout=120) for _ in procs]
        for p in procs:
            p.join(30)
    assert all(s == seen[0] for s in seen)
    assert all(t.startswith("Edition") for t in seen[0].values())
    cache = RenderCache(d / "renders.sqlite")
    assert cache.counts() == {"llm": len(urls)}


# -- command line --------------------------------------------------------------------------
def cli(*args):
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-m", "fictionworld.cli", *map(str, args)], capture_output=True,
                          text=True, timeout=300)  # fmt: skip


@pytest.mark.cli
def test_cli_fidelity_template_and_sglang(saved_world, tmp_path, world):
    import shutil

    r = cli("fidelity", saved_world, "--n", "400", "--searches", "40", "--json")
    assert r.returncode == 0, r.stderr
    s = json.loads(r.stdout)
    assert s["rendered"] > 400 and s["first_try_pass_rate"] == 1.0 and s["facts_covered"] == 1.0
    d = tmp_path / "w"
    shutil.copytree(saved_world, d)

    # about every third page omits its lead paragraph omits its first sentence: caught, retried, and passes on the next try
    def page(url, text, n):
        return wrap(restyled(text) if n > 1 or len(url) % 3 else text.split("\n\n", 1)[-1])

    with ScriptedOpenAIServer(Script(world.web, page=page)) as srv:
        r = cli("fidelity", d, "--world-model", "sglang", "--world-model-url", srv.base_url, "--world-model-name", "scripted",
                "--n", "30", "--searches", "5", "--json")  # fmt: skip
    assert r.returncode == 0, r.stderr
    s = json.loads(r.stdout)
    assert s["world_model"] == "sglang" and s["pages"] == 30 and s["fallbacks"] == 0
    assert s["pass_rate_after_retries"] == 1.0 and s["llm_calls"] > 30
    assert not (d / "renders.sqlite").exists() or RenderCache(d / "renders.sqlite").counts() == {}


@pytest.mark.cli
def test_cli_open_with_the_server_down_says_so_and_serves_the_template(saved_world, world):
    url = world.web.pages.urls[0]
    r = cli("open", saved_world, url, "--world-model", "sglang", "--world-model-url", "http://127.0.0.1:9/v1")
    assert r.returncode == 0, r.stderr
    assert "no SGLang server answers" in r.stderr and "serving template pages" in r.stderr
    assert world.web.pages.text(0).splitlines()[0] in r.stdout
    r = cli("search", saved_world, "anything", "--world-model", "sglang")
    assert r.returncode == 2 and "needs --world-model-url" in r.stderr


def test_a_teased_number_in_a_name_is_still_the_name():
    """ "Juopla Music Festival …" (its year teased) names the festival, not the place Juopla the
    graph does not connect to the page: template snippets pass, an unrelated place still fails."""
    import fictionworld as fw

    web = fw.generate(seed=3, entities=2_000).web
    v = Verifier(web)
    results = web.search("Books published in 2014", 10)
    rows = [web.pages.row_of_url[r.url] for r in results]
    teased = [(row, r) for row, r in zip(rows, results) if re.search(r"\w+ Festival … ", r.snippet)]
    assert teased  # the case: a numbered name teased in a snippet
    for row, r in teased:
        assert v.verify_result(v.grounding(row), r.title, r.snippet, leak=False).ok, r.snippet
    row, r = teased[0]
    stranger = next(n for n in v.names if n not in r.snippet and " " not in n and len(n) > 5)
    bad = v.verify_result(v.grounding(row), r.title, r.snippet + f" It was moved to {stranger}.", leak=False)
    assert not bad.ok


def test_processes_opening_a_new_cache_at_once_all_get_it(tmp_path):
    """Opening a new cache file switches it to WAL; connections doing that at once can get
    "database is locked" from SQLite with no wait (a single try failed about 2 % of opens of
    6 at once here): the cache opens again within its timeout instead of failing."""
    for f in range(30):
        path, barrier, errors, caches = tmp_path / f"c{f}.sqlite", threading.Barrier(6), [], []

        def open_it(path=path, barrier=barrier, errors=errors, caches=caches):
            barrier.wait()
            try:
                caches.append(RenderCache(path, timeout=10))
            except Exception as e:  # noqa: BLE001 - any failure is the finding
                errors.append(e)

        threads = [threading.Thread(target=open_it) for _ in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors and len(caches) == 6
        caches[0].put("ns", "k", "https://x", "body", "llm", 1)
        assert all(c.get("ns", "k") == ("body", "llm", 1) for c in caches)
