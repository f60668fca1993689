"""The trainer adapters' overhead per tool call, for ``bench_rollout.py --adapters``: the same
search and open calls run through the bare env step (``SearchEnv.step``), the shared
:class:`~fictionworld.env.trainer.Episode`, verl's tool lifecycle on our ``FictionWorldTool``
(``create`` → ``execute`` → ``release``, as ``ToolAgentLoop`` runs it, with a real ``AgentData``)
and TRL's env method call on ``FictionWorldEnv``. Every call runs through all four, in an
order that rotates from call to call (so warm caches favour none: the one that runs a call
first pays its cold caches), and the overhead is the
paired difference to the bare step of the same call. One core; target ≤ 0.2 ms per call. The
figures go into the record of the benchmark that runs it (``bench_rollout.py``)."""

from __future__ import annotations

import asyncio
import contextlib
import io
import random
import statistics
import time

from record import Record  # (beside this file: the benchmarks' directory is on sys.path)

TARGET_MS = 0.2
PATHS = ("env.step", "Episode.call", "verl tool", "TRL env")


def _calls(world, n: int) -> list[tuple[str, dict]]:
    rng, ids, web = random.Random(0), world.entities.ids, world.web
    words = ["", "", "born", "founded", "population", "author", "released", "headquarters"]
    out = []
    for r in rng.sample(range(len(ids)), n):
        out.append(("search", {"query": f"{world.entity(ids[r]).name} {rng.choice(words)}".strip()}))
        out.append(("open", {"url": web.article_url_of(ids[r])}))
    return out


def measure(world, wdir, task, *, calls: int = 1000, reset_every: int = 50) -> dict[str, list[float]]:
    """Seconds per call of each path in :data:`PATHS` (lists in call order)."""
    from verl.experimental.agent_loop.tool_agent_loop import AgentData

    from fictionworld.env import EnvConfig, SearchEnv
    from fictionworld.env.trainer import TRAINER_ENV, Episode, task_json
    from fictionworld.integrations.trl import FictionWorldEnv, dataset_row
    from fictionworld.integrations.verl import FictionWorldTool

    web = world.web
    plan = _calls(world, calls // 2)
    for name, args in plan[: min(100, len(plan))]:  # warm the linker and the index
        getattr(web.session(web.knobs, 0), name)(*args.values())
    env = SearchEnv(web, EnvConfig(**TRAINER_ENV))
    with contextlib.redirect_stdout(io.StringIO()):  # verl's BaseTool prints each schema
        tools = {n: FictionWorldTool({"type": "native", "name": n}) for n in ("search", "open", "answer")}
    trl_env = FictionWorldEnv()
    gt = task_json(task)
    create = {"world_dir": str(wdir), "task": gt, "seed": 0, "knobs": "", "tools": "basic"}
    row = dataset_row(task, wdir, seed=0)
    times: dict[str, list[float]] = {p: [] for p in PATHS}
    state: dict = {}

    def new_trajectory(seed: int) -> None:
        env.reset(task, seed=seed)
        state["episode"] = Episode(web, gt, seed=seed)
        state["agent_data"] = AgentData(messages=[], image_data=None, video_data=None, audio_data=None,
                                        mm_processor_kwargs=None, metrics={}, request_id=f"r{seed}",
                                        tools_kwargs={})  # fmt: skip
        create["seed"] = seed
        trl_env.reset(**(row | {"seed": seed}))

    async def verl_call(name: str, args: dict) -> None:
        tool = tools[name]
        iid, _ = await tool.create(create_kwargs=create)
        try:
            await tool.execute(iid, args, agent_data=state["agent_data"])
        finally:
            await tool.release(iid)

    async def run() -> None:
        for i, (name, args) in enumerate(plan):
            if i % reset_every == 0:
                new_trajectory(i)
            r = (i // 2) % 4  # calls alternate search/open: rotate per pair, so each path leads on both kinds
            order = PATHS[r:] + PATHS[:r]
            for path in order:
                t = time.perf_counter()
                if path == "env.step":
                    env.step({"name": name, "arguments": args})
                elif path == "Episode.call":
                    state["episode"].call(name, args)
                elif path == "verl tool":
                    await verl_call(name, args)
                else:
                    getattr(trl_env, name)(**args)
                times[path].append(time.perf_counter() - t)

    asyncio.run(run())
    return times


def report(times: dict[str, list[float]], *, entities: int, pages: int, rec: Record | None = None) -> bool:
    """Prints the table (and records its figures in ``rec``); True when every adapter's mean
    overhead holds the target."""
    base = times["env.step"]
    print(f"\n== trainer adapters: overhead per tool call over the bare env step ({entities:,} entities, "
          f"{pages:,} pages, one core) ==")  # fmt: skip
    print("each call runs through every path in rotating order; overhead = path − env.step of the same call")
    print(f"{'path':14} {'n':>5} | {'call ms: p50':>12} {'mean':>7} | {'overhead ms: p50':>16} {'mean':>7}")
    ok = True
    for path, xs in times.items():
        diffs = [x - b for x, b in zip(xs, base)]
        over_mean = statistics.mean(diffs) * 1e3
        tail = "" if path == "env.step" else f"  {'ok' if over_mean <= TARGET_MS else 'OVER'}"
        ok &= path == "env.step" or over_mean <= TARGET_MS
        print(f"{path:14} {len(xs):>5} | {1e3 * statistics.median(xs):>12.3f} {1e3 * statistics.mean(xs):>7.3f} | "
              f"{1e3 * statistics.median(diffs):>16.3f} {over_mean:>7.3f}{tail}")  # fmt: skip
        if rec is not None:
            at = {"entities": entities, "pages": pages, "path": path}
            rec.figure("adapter calls", len(xs), "", **at)
            rec.figure("adapter call", 1e3 * statistics.median(xs), "ms", **at, stat="p50")
            rec.figure("adapter call", 1e3 * statistics.mean(xs), "ms", **at, stat="mean")
            if path != "env.step":
                rec.figure("adapter overhead", 1e3 * statistics.median(diffs), "ms", **at, stat="p50")
                rec.figure("adapter overhead", over_mean, "ms", **at, stat="mean")
    print(f"target: mean overhead ≤ {TARGET_MS} ms per call: {'holds' if ok else 'MISSED'}")
    if rec is not None:
        rec.note(f"trainer adapters: mean overhead ≤ {TARGET_MS} ms per call over the bare env step: "
                 f"{'holds' if ok else 'missed'}")  # fmt: skip
    return ok
