"""Generation in block tasks (fictionworld/generators/blocks.py) against its peer in the same run: the same
generators with every type in one block (``generation_block`` above every type's size: how
the graph was generated before blocks, one process, one pass), then the blocks in this process,
then the blocks on local worker processes. Each runs in a fresh process tree whose RSS is
sampled every 0.2 s (bench_validate.sampled). The blocked runs must give one world hash.

    python benchmarks/bench_blocks.py --entities 1000000 --workers 2
"""

from __future__ import annotations

import argparse

from bench_validate import sampled
from record import Record, add_options

GENERATE = """
import json, sys, time
from fictionworld.executors import LocalTasks
from fictionworld.spec import default_spec
from fictionworld.generators import generate_world
n, block, workers = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
spec = default_spec(n).model_copy(update={"generation_block": block})
tasks = None
if workers > 1:
    tasks = LocalTasks(workers)
    tasks.start([])
t = time.perf_counter()
world = generate_world(spec, 1, tasks=tasks)
wall = time.perf_counter() - t
if tasks is not None:
    tasks.stop()
print(json.dumps({"wall_s": wall, "hash": world.world_hash, "facts": len(world.facts)}))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--entities", type=int, default=1_000_000)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--block", type=int, default=65_536)
    add_options(ap)
    a = ap.parse_args()
    with Record("blocks", a) as rec:
        run(a, rec)


def run(a: argparse.Namespace, rec: Record) -> None:
    n = str(a.entities)
    rows = {
        "one block per type (peer)": sampled(GENERATE, n, str(1 << 24), "1"),
        "blocks, this process": sampled(GENERATE, n, str(a.block), "1"),
        f"blocks, {a.workers} workers": sampled(GENERATE, n, str(a.block), str(a.workers)),
    }
    print(f"{'':<28} {'wall':>8} {'entities/s':>11} {'peak one':>10} {'peak tree':>10}")
    for name, r in rows.items():
        print(f"{name:<28} {r['wall_s']:>7.1f}s {a.entities / r['wall_s']:>11,.0f} "
              f"{r['peak_one_gib']:>8.2f}GiB {r['peak_tree_gib']:>8.2f}GiB")  # fmt: skip
        at = {"entities": a.entities, "block": a.block, "how": name}
        rec.figure("wall", r["wall_s"], "s", **at)
        rec.figure("rate", a.entities / r["wall_s"], "1/s", **at, what="entities per s")
        rec.figure("peak RSS", r["peak_one_gib"], "GiB", **at, what="one process")
        rec.figure("peak RSS", r["peak_tree_gib"], "GiB", **at, what="the process tree")
        rec.figure("facts", r["facts"], "", **at)
    peer, here, pool = rows.values()
    print(f"blocks here / one block: wall {here['wall_s'] / peer['wall_s']:.2f}x; "
          f"{a.workers} workers over this process: {here['wall_s'] / pool['wall_s']:.2f}x")  # fmt: skip
    assert here["hash"] == pool["hash"], "the workers made another world"
    rec.ratio("wall, blocks in this process / one block per type", here["wall_s"], peer["wall_s"], entities=a.entities,
              block=a.block, against="the same generators with every type in one block (before blocks), one process")  # fmt: skip
    rec.figure("speed-up", here["wall_s"] / pool["wall_s"], "×", entities=a.entities, block=a.block, workers=a.workers,
               over=1)  # fmt: skip
    rec.note(f"the blocks in this process and on {a.workers} workers made one world (hash {here['hash']})")


if __name__ == "__main__":
    main()
