"""Mapping a saved web's files into the page tables ahead of its searches (``Web.preload``,
``WorldService.start_preload``; ``fictionworld serve --preload``, tested in test_serve.py)."""

from __future__ import annotations

import mmap
import os
import sys

import pytest

import fictionworld as fw
from fictionworld.env.service import WorldService
from fictionworld.web.preload import mapped_files, preload

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="page tables are read from /proc")


def _mapped_kib(path_part: str) -> tuple[int, int]:
    """(size, Rss) in KiB, summed over this process's maps of files whose path holds
    ``path_part``: Rss counts the pages present in its page tables."""
    size = rss = 0
    current = False
    with open("/proc/self/smaps") as f:
        for line in f:
            head = line.split()
            if "-" in head[0] and len(head) >= 5 and not head[0].endswith(":"):
                current = len(head) >= 6 and path_part in head[5]
            elif current and head[0] == "Size:":
                size += int(head[1])
            elif current and head[0] == "Rss:":
                rss += int(head[1])
    return size, rss


def test_preload_fills_the_page_tables_of_every_map_of_the_world_and_changes_no_answer(saved_world):
    world = fw.World.load(saved_world, verify="on-read")
    web = world.web
    queries = [web.pages.titles[i] for i in range(0, len(web.pages), max(1, len(web.pages) // 60))]
    before = [[(r.url, r.score) for r in world.search(q, k=10)] for q in queries]
    maps = mapped_files(saved_world)
    names = {os.path.basename(p) for *_, p in maps}
    assert "pages.arrow" in names and any(n.endswith(".idx") for n in names)  # the pages, the index segments
    size, rss = _mapped_kib(f"{os.path.realpath(saved_world)}/pages.arrow")
    assert 0 < rss < size  # only what the searches touched

    done = web.preload(resident_only=False)
    assert done.supported and done.files == len({p for *_, p in maps}) and done.mapped == done.total > 0
    assert done.total == sum(b - a for a, b, _ in mapped_files(saved_world))
    size, rss = _mapped_kib(f"{os.path.realpath(saved_world)}/pages.arrow")
    assert rss == size
    again = web.preload()  # now every page is in the page cache: all of it mapped, nothing skipped
    assert again.mapped == again.total and again.skipped == 0
    assert [[(r.url, r.score) for r in world.search(q, k=10)] for q in queries] == before


def _resident(directory) -> int:
    """Pages of the (one) mapped file under ``directory`` that the page cache holds."""
    import numpy as np

    from fictionworld.web.preload import _libc

    [(lo, hi, _)] = mapped_files(directory)
    vec = np.zeros((hi - lo) // mmap.PAGESIZE, np.uint8)
    assert _libc().mincore(lo, hi - lo, vec.ctypes.data) == 0
    return int((vec & 1).sum())


def test_by_default_only_what_the_page_cache_holds_is_mapped(tmp_path):
    """Nothing is read from disk: a file evicted from the page cache is skipped; the part read
    since is mapped."""
    path = tmp_path / "data.bin"
    pages = 2048
    step = mmap.PAGESIZE
    with open(path, "wb") as f:
        f.write(os.urandom(pages * step))
        f.flush()
        os.fsync(f.fileno())
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)  # (no read-ahead past what is read)
        m = mmap.mmap(fd, 0, prot=mmap.PROT_READ)
        if _resident(tmp_path):
            pytest.skip("this filesystem keeps the file in memory whatever is asked (tmpfs?)")
        probe = preload(tmp_path)
        assert probe.supported, probe.reason
        assert probe.total == pages * step and probe.skipped == probe.total
        assert _mapped_kib(str(path))[1] == 0
        os.pread(fd, pages // 4 * step, 0)  # the first quarter read into the page cache, not through the map
        part = preload(tmp_path)
        # (a kernel may still read a little ahead)
        assert pages // 4 * step <= part.mapped < pages // 2 * step and part.mapped + part.skipped == part.total
        assert _mapped_kib(str(path))[1] * 1024 == part.mapped
        m.close()
    finally:
        os.close(fd)


def test_a_kernel_that_cannot_is_told_not_raised(saved_world, tmp_path):
    world = fw.World.load(saved_world, verify="on-read")
    world.search("festival", k=3)
    got = preload(saved_world, advice=0x7FFF)  # an advice no kernel knows: EINVAL, as before 5.14
    assert not got.supported and "not supported" in got.reason and got.mapped == 0
    empty = preload(tmp_path)  # no map of any file there
    assert empty.supported and empty.total == empty.mapped == 0 and empty.files == 0


def test_the_service_preloads_in_the_background_only_when_asked(saved_world):
    off = WorldService.open(saved_world)
    assert off.start_preload() is None and off.info()["preload"] == {"state": "off"}
    on = WorldService.open(saved_world, preload=True)
    thread = on.start_preload()
    thread.join(60)
    info = on.info()["preload"]
    assert info["state"] == "done" and info["supported"] and info["mapped_bytes"] > 0, info
    assert on.search("festival", k=3) == off.search("festival", k=3)


def test_the_service_reads_what_a_first_open_needs_before_it_serves(saved_world):
    """A warmed service has read the entities' ids (what the first ``open`` of a process reads:
    seconds at 10M entities) and the spellers' letters, so forked workers share them; an
    unwarmed one has not."""
    cold = WorldService.open(saved_world, warm=False)
    assert "local" not in cold.web.world.entities.__dict__
    assert "_letters" not in cold.web.linker.speller.__dict__
    warm = WorldService.open(saved_world)
    assert {"local", "type_code"} <= set(warm.web.world.entities.__dict__)
    assert "_letters" in warm.web.linker.speller.__dict__ and "_letters" in warm.web._speller.__dict__
    url = warm.search("festival", k=1)["results"][0]["url"]
    assert warm.open_url(url)["page"] == cold.open_url(url)["page"]
