"""The search and open tools: ranking, entity linking, determinism, formats, bad input."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from typer.testing import CliRunner

import fictionworld as fw
from fictionworld.cli import app
from fictionworld.web import Page, PageNotFound, Web, WebError, format_results
from fictionworld.web.session import KeptPages
from fictionworld.web.web import RESULTS_KEPT

SERP = re.compile(r"\[(\d+)\] https://\S+\nTitle: .+\nSnippet: .*\nDate: [A-Z][a-z]{2} \d{1,2}, \d{4}")


def _unique_named(world, types, n, seed=0):
    e = world.entities
    names = e.name.tolist()
    counts = {}
    for x in names:
        counts[x] = counts.get(x, 0) + 1
    rows = [r for r in np.flatnonzero(np.isin(e.type_code, [fw.World.__module__ and t for t in types])).tolist()]
    rows = [r for r in rows if counts[names[r]] == 1]
    return np.random.default_rng(seed).choice(rows, min(n, len(rows)), replace=False).tolist()


def _codes(*types):
    from fictionworld.tables import TYPE_CODE

    return [TYPE_CODE[t] for t in types]


def test_a_name_finds_its_article_first(world):
    for r in _unique_named(world, _codes("person", "company", "city", "book", "film", "event"), 60):
        top = world.search(world.entities.name[r], k=3)[0]
        assert top.url == world.web.article_url_of(world.entities.ids[r])


def _misspell(name: str) -> str:
    words = name.split(" ")
    i = max(range(len(words)), key=lambda k: len(words[k]))
    w = words[i]
    words[i] = w[:2] + w[3] + w[2] + w[4:]  # swap two inner letters
    return " ".join(words)


def test_misspelt_names_still_find_their_entity(world):
    rows = [r for r in _unique_named(world, _codes("person", "company", "city"), 80, 1)]
    rows = [r for r in rows if max(len(w) for w in world.entities.name[r].split()) >= 6][:40]
    assert len(rows) >= 20
    for r in rows:
        query = _misspell(world.entities.name[r])
        urls = [x.url for x in world.search(query, k=3)]
        assert world.web.article_url_of(world.entities.ids[r]) in urls, query


def test_partial_names_and_aliases_find_their_entity(world):
    e = world.entities
    companies = [r for r in _unique_named(world, _codes("company"), 30, 2) if e.aliases[r]]
    assert companies
    for r in companies:  # the alias is the company's distinctive stem ("Sianbral")
        urls = [x.url for x in world.search(e.aliases[r][0], k=5)]
        assert world.web.article_url_of(e.ids[r]) in urls


def test_same_query_same_results_and_pages_do_not_overlap(world):
    q = "company founded in the software industry"
    a, b = world.search(q, k=5), world.search(q, k=5)
    assert a == b
    p2 = world.search(q, k=5, page=2)
    assert not {x.url for x in a} & {x.url for x in p2}
    assert [x.url for x in world.search(q, k=10)] == [x.url for x in a + p2]
    scores = [x.score for x in world.search(q, k=10)]
    assert scores == sorted(scores, reverse=True)


def test_results_render_in_the_agent_format(world):
    results = world.search("football team stadium", k=4)
    text = format_results("football team stadium", results)
    blocks = text.split("\n\n")
    assert len(blocks) == 4
    assert [int(SERP.fullmatch(b).group(1)) for b in blocks] == [1, 2, 3, 4]
    assert "No results" in format_results("zzzz", [])


def test_open_returns_markdown_or_a_readable_not_found(world):
    url = world.search("university", k=1)[0].url
    page = world.open(url)
    assert isinstance(page, Page) and page.markdown().startswith(f"# {page.title}\n\nURL: {url}")
    missing = world.open("https://en.fictopedia.org/wiki/No_Such_Page_Anywhere")
    assert isinstance(missing, PageNotFound) and "404" in missing.markdown()
    assert isinstance(world.open(url + "/"), Page)  # a trailing slash is the same page


@pytest.mark.parametrize("bad", ["", "   ", "not a url", "ftp://x.org/a", "https://nohost/a", "x" * 3000, None, 7])
def test_malformed_urls_are_clear_errors(world, bad):
    with pytest.raises(WebError):
        world.open(bad)


@pytest.mark.parametrize("bad", ["", "  ", "q" * 2000, None])
def test_malformed_queries_are_clear_errors(world, bad):
    with pytest.raises(WebError):
        world.search(bad)


def test_bad_k_and_page(world):
    with pytest.raises(WebError):
        world.search("x", k=0)
    with pytest.raises(WebError):
        world.search("x", page=0)


def test_saved_world_searches_the_same(world, saved_world):
    loaded = fw.World.load(saved_world)
    for q in ["robotics", "born in", world.entities.name[5], "festival 2004"]:
        assert loaded.search(q, k=5) == world.search(q, k=5)
    url = world.search("award", k=1)[0].url
    assert loaded.open(url) == world.open(url)


def test_corrupt_or_foreign_web_files_are_clear_errors(world, tmp_path):
    import shutil

    d = tmp_path / "w"
    world.save(d)
    (d / "pages.arrow").write_bytes(b"garbage")
    with pytest.raises(WebError, match="pages.arrow"):
        Web.load(fw.World.load(d), d)
    world.save(d, overwrite=True)
    meta = json.loads((d / "web.json").read_text())
    (d / "web.json").write_text(json.dumps(meta | {"world_hash": "0" * 40}))
    with pytest.raises(WebError, match="another world"):
        Web.load(fw.World.load(d), d)
    r = CliRunner().invoke(app, ["validate", str(d)])  # the graph checks out, so the web is the one
    assert r.exit_code == 2 and "web.json: built for another world" in r.output, r.output
    (d / "web.json").write_bytes(b'{"format": "\xff"}')  # one byte that is no UTF-8
    with pytest.raises(WebError, match=r"web.json: not text \(UTF-8\)"):
        Web.load(fw.World.load(d), d)
    world.save(d, overwrite=True)
    shutil.rmtree(d / "index")
    with pytest.raises(WebError, match="index"):
        Web.load(fw.World.load(d), d)


def _web_file(d, which: str):
    if which == "index segment":
        return max((d / "index").glob("*.idx"), key=lambda p: p.stat().st_size)
    return d / which


@pytest.mark.parametrize("which", ["pages.arrow", "pages.codes.npy", "index segment", "lexicon/names.arrow"])
def test_one_flipped_bit_in_any_web_file_fails_validate_naming_the_file(saved_world, tmp_path, which):
    """Arrow, NumPy and tantivy files carry no checksum of their own (a flipped bit in the
    pages' offsets aborted the process that read that page): web.json records every web
    file's size and digest, and ``validate`` checks them."""
    import shutil

    d = tmp_path / "w"
    shutil.copytree(saved_world, d)
    r = CliRunner().invoke(app, ["validate", str(d), "--json"])
    assert r.exit_code == 0 and json.loads(r.output)["web_files_verified"] is True, r.output
    f = _web_file(d, which)
    data = bytearray(f.read_bytes())
    data[len(data) // 2] ^= 0x10
    f.write_bytes(data)
    r = CliRunner().invoke(app, ["validate", str(d)])
    name = f.relative_to(d).as_posix()
    assert r.exit_code == 2 and f"{name} does not match web.json's digest" in r.output, r.output
    f.write_bytes(data[:-1])  # a shorter file: Web.load sees it too (a stat, not a read)
    with pytest.raises(WebError, match=f"{re.escape(name)} has another size than web.json records"):
        fw.World.load(d).search("robotics company")


def test_searching_writes_no_web_file_and_a_web_saved_without_digests_still_opens(saved_world, tmp_path):
    import shutil

    from fictionworld.web.web_files import verify_web, web_file_names

    d = tmp_path / "w"
    shutil.copytree(saved_world, d)
    w = fw.World.load(d)
    for q in ("robotics company", "who founded", "festival 1977", "xyzzy"):
        w.search(q)
    w.open(w.search("robotics company")[0].url)
    meta = json.loads((d / "web.json").read_text())
    assert sorted(meta["files"]) == web_file_names(d) and verify_web(d) is True
    assert {"pages.arrow", "pages.codes.npy"} <= set(meta["files"]) and any(
        n.startswith("index/") for n in meta["files"]
    )
    assert any(n.startswith("lexicon/") for n in meta["files"])
    (d / "web.json").write_text(json.dumps({k: v for k, v in meta.items() if k != "files"}))
    assert verify_web(d) is False and fw.World.load(d).search("robotics company")
    r = CliRunner().invoke(app, ["validate", str(d), "--json"])
    assert r.exit_code == 0 and json.loads(r.output)["web_files_verified"] is False, r.output


def test_a_tantivy_panic_is_a_damaged_index_error_at_load_at_search_and_in_the_cli(saved_world, monkeypatch):
    """A damaged index makes tantivy panic (pyo3's PanicException, a BaseException that every
    ``except Exception`` misses): the index turns it into a DamagedIndexError naming the
    index, Web.load into a WebError, and the CLI into one error line for any other panic."""
    from web_helpers import Panicking, tantivy_panic

    from fictionworld.errors import is_native_panic
    from fictionworld.web import index as index_module
    from fictionworld.web.index import DamagedIndexError

    w = fw.World.load(saved_world)
    panic = tantivy_panic(w.web.index.searcher)
    assert is_native_panic(panic) and not isinstance(panic, Exception)
    w.web.index.searcher = Panicking(panic)
    where = re.escape(str(saved_world / "index"))
    for call in (lambda: w.search("robotics company"), lambda: w.web.index.exact_titles("Anything")):
        with pytest.raises(DamagedIndexError, match=f"{where}: the search index is damaged .*index --force"):
            call()

    def panics(*args, **kwargs):
        raise panic

    with monkeypatch.context() as m:
        m.setattr(index_module.TantivyIndex, "__init__", panics)
        with pytest.raises(WebError, match=f"{where}: the search index is damaged"):
            fw.World.load(saved_world).search("robotics company")  # (the web opens when first used)
        r = CliRunner().invoke(app, ["search", str(saved_world), "robotics company"])
        assert r.exit_code == 2 and "the search index is damaged" in r.output and "Traceback" not in r.output
    with monkeypatch.context() as m:
        m.setattr(Web, "search", panics)  # a panic the index did not turn into an error
        r = CliRunner().invoke(app, ["search", str(saved_world), "robotics company"])
        assert r.exit_code == 1 and "error: unexpected PanicException" in r.output, r.output


def test_cli_search_and_open(world, saved_world):
    runner = CliRunner()
    r = runner.invoke(app, ["search", str(saved_world), "robotics company", "--k", "3"])
    assert r.exit_code == 0, r.output
    assert [int(m.group(1)) for m in SERP.finditer(r.output)] == [1, 2, 3]
    r = runner.invoke(app, ["search", str(saved_world), "robotics company", "--k", "3", "--json"])
    data = json.loads(r.output)
    assert len(data) == 3 and set(data[0]) == {"url", "title", "snippet", "date", "score", "kind"}
    r = runner.invoke(app, ["open", str(saved_world), data[0]["url"], "--json"])
    assert r.exit_code == 0 and json.loads(r.output)["found"] is True
    r = runner.invoke(app, ["open", str(saved_world), data[0]["url"]])
    assert r.output.startswith("# ")
    r = runner.invoke(app, ["open", str(saved_world), "https://en.fictopedia.org/wiki/Nope"])
    assert r.exit_code == 1 and "404" in r.output
    r = runner.invoke(app, ["open", str(saved_world), "not a url"])
    assert r.exit_code == 2 and "malformed URL" in r.output
    r = runner.invoke(app, ["search", str(saved_world), "x", "--knob", "conflict_rate=7"])
    assert r.exit_code == 2 and "knob 'conflict_rate': must be <= 1" in r.output


def test_cli_indexes_a_world_saved_without_web(world, tmp_path):
    d = tmp_path / "bare"
    world.save(d, web=False)
    assert not (d / "web.json").exists()
    runner = CliRunner()
    r = runner.invoke(app, ["search", str(d), world.entities.name[3], "--k", "1"])
    assert r.exit_code == 0 and (d / "web.json").exists()
    r = runner.invoke(app, ["index", str(d)])
    assert r.exit_code == 1 and "already has a web" in r.output
    r = runner.invoke(app, ["index", str(d), "--force"])
    assert r.exit_code == 0, r.output


def test_the_index_finds_exact_titles_as_a_table_of_all_titles_would(world):
    """``exact_titles`` (one term of the folded title in the index) against the dict of every
    folded title it replaced, on titles and on case, accent and spacing variants of them."""
    import unicodedata

    from fictionworld.folding import fold_phrase

    web = world.web
    table: dict[str, list[int]] = {}
    for row, title in enumerate(web.pages.titles):
        table.setdefault(fold_phrase(title), []).append(row)
    rng = np.random.default_rng(4)
    titles = [web.pages.titles[i] for i in rng.choice(len(web.pages), 1500, replace=False)]
    accented = [
        unicodedata.normalize("NFC", "".join(c + "\u0301" if c in "aeiou" else c for c in t)) for t in titles[:200]
    ]
    variants = [t.upper() for t in titles[:200]] + ["  " + t.replace(" ", "   ") + " " for t in titles[:200]] + accented
    shared = [k for k, rows in table.items() if len(rows) > 1][:50]  # titles several pages share
    assert shared
    for q in titles + variants + shared + ["no such title anywhere", "", "   ", "–"]:
        assert web.index.exact_titles(q) == table.get(fold_phrase(q), []), q


# -- result pages asked again ------------------------------------------------------------------
def _counting(web, monkeypatch) -> list:
    """A fresh result cache for ``web``, and a list that grows by one per ranking ``search`` runs."""
    monkeypatch.setattr(web, "kept", KeptPages(RESULTS_KEPT))
    asked = []
    hits = web.hits
    monkeypatch.setattr(web, "hits", lambda *a, **kw: asked.append(a) or hits(*a, **kw))
    return asked


def test_a_result_page_asked_again_is_kept_and_the_same(world, monkeypatch):
    web = world.web
    queries = [world.entities.name[r] for r in _unique_named(world, _codes("person", "company", "film"), 12)]
    queries += ["films released in 1994", "Rumal Shipyrds founded", "who founded it"]
    shown = fw.Knobs(distractor_rate=1.0, confusable_rate=1.0, conflict_rate=1.0, snippet_leak_rate=1.0)
    asks = [(q, k, page, knobs) for q in queries for k, page in ((10, 1), (10, 2), (3, 1)) for knobs in (None, shown)]
    fresh = Web(world, web.pages, web.index)  # the same web, nothing kept
    fresh.kept.limit = 0
    want = [fresh.search(q, k, page, knobs) for q, k, page, knobs in asks]
    asked = _counting(web, monkeypatch)
    for _ in range(2):
        got = [web.search(q, k, page, knobs) for q, k, page, knobs in asks]
        assert got == want and [(g.page, g.last_page) for g in got] == [(w.page, w.last_page) for w in want]
    assert len(asked) == len(asks)  # each (query, k, page, knobs) ranked once
    assert any(a != b for a, b in zip(want[0::2], want[1::2]))  # the knobs change what is shown
    got[0].clear()  # an answer is the caller's own list
    assert web.search(*asks[0]) == want[0]


def test_the_kept_results_are_bounded_and_an_llm_world_models_pages_never_kept(world, monkeypatch):
    web = world.web
    asked = _counting(web, monkeypatch)
    web.kept.limit = 25
    names = [world.entities.name[r] for r in range(40)]
    for q in names + names:
        web.search(q, k=10)
        assert web.kept.held == sum(len(r) for r, _ in web.kept.pages.values()) <= 25
    assert len(asked) == 80  # 25 results hold no more than three pages of ten: every one asked again

    class Written(fw.web.model.TemplateWorldModel):  # any other model writes its own pages
        name = "written"

    asked.clear()
    web.kept.pages.clear()
    web.kept.limit = 10_000
    monkeypatch.setattr(web, "model", Written())
    for q in names[:5] * 2:
        web.search(q, k=10)
    assert len(asked) == 10 and not web.kept.pages


def _made_up(n: int, seed: int) -> str:
    """A query of ``n`` made-up 8-letter words: none in the world, each corrected."""
    rng = np.random.default_rng(seed)
    return " ".join(
        "".join(rng.choice(list("bcdfgklmnprstvz")) + rng.choice(list("aeiou")) for _ in range(4)) for _ in range(n)
    )


def test_a_deadline_stops_one_query_between_its_words_and_none_changes_nothing(world, monkeypatch):
    """A search given a deadline (``time.monotonic()``) checks it between the query's words:
    one query of many unknown words, each corrected, stops inside the query once it passes,
    with DeadlinePassed and no hits (before, only a batch's queries were checked, so one query
    ran its words to the end). No deadline, or one far off, gives the same results as ever."""
    import time

    from fictionworld.web.speller import DeadlinePassed, Speller

    web = Web.build(world)
    web.kept.limit = 0
    query = _made_up(30, seed=5)
    plain = [r.url for r in web.search(query, k=5)]
    assert plain == [r.url for r in web.search(query, k=5, deadline=time.monotonic() + 600)]
    assert [h.page for h in web.hits("robotics company", 5)] == [
        h.page for h in web.hits("robotics company", 5, deadline=time.monotonic() + 600)
    ]
    with pytest.raises(DeadlinePassed):
        web.search(query, k=5, deadline=time.monotonic() - 1)
    pools, spellings = [], Speller.spellings

    def slow(self, word, *args, **kwargs):  # each word's spellings take 50 ms more: 30 words, 1.5 s at least
        pools.append(word)
        time.sleep(0.05)
        return spellings(self, word, *args, **kwargs)

    monkeypatch.setattr(Speller, "spellings", slow)
    t0 = time.monotonic()
    with pytest.raises(DeadlinePassed):
        web.hits(query, 5, deadline=t0 + 0.3)
    assert 1 <= len(pools) <= 8 < len(query.split()), pools  # stopped inside the query, at the deadline
    assert time.monotonic() - t0 < 2.5
