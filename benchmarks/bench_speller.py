"""Misspelt words corrected with and without the one-edit search, side by side in one process on
a saved world:

    python benchmarks/bench_speller.py --world DIR [--words 2000] [--seed 0]

``Speller.correct`` scores a pool of words of about the same length sharing the word's first or
last letters; at 10M entities a common ending ("-nen") makes pools of 60,000 words (10-20 ms).
A pool larger than ``speller.ONE_EDIT_POOL`` is first searched for the words one edit away
(``Speller._one_edit``); "without" sets that limit past every pool. Both spellers of the web
(the linker's, of entity names; the web's, of names and directory titles) correct the same
misspellings of their own words, drawn with a seed: one edit (a letter dropped, added, changed,
or two neighbours swapped) and two edits. Pinned to one core, each way in turn (which goes
first alternates); the answers must be the same. Printed: p50 / p90 / p99 / mean per speller
and kind, the ratio of the means, and the pool sizes.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

import numpy as np
from record import Record, add_options  # (beside this script: its directory is on sys.path)


def misspell(word: str, letters: str, rng: random.Random) -> str:
    """``word`` with one edit at a random place: a letter dropped, added, changed, or swapped
    with the next."""
    i = rng.randrange(len(word))
    c = rng.choice(letters)
    op = rng.randrange(4)
    if op == 0:
        return word[:i] + word[i + 1 :]
    if op == 1:
        return word[:i] + c + word[i:]
    if op == 2:
        return word[:i] + c + word[i + 1 :]
    return word[:i] + word[i + 1 : i + 2] + word[i] + word[i + 2 :]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--world", required=True, help="a saved world with its web")
    ap.add_argument("--words", type=int, default=2000, help="misspellings per speller and kind")
    ap.add_argument("--seed", type=int, default=0)
    add_options(ap)
    args = ap.parse_args()
    with Record("speller", args) as rec:
        run(args, rec)


def run(args: argparse.Namespace, rec: Record) -> None:
    sys.path.insert(0, str(Path(__file__).parent))
    from search_children import latency_world

    from fictionworld.web import speller as linker  # (ONE_EDIT_POOL lives with the speller)

    world, _ = latency_world(args.world)
    web = world.web
    spellers = {"names (linker)": web.linker.speller, "names + directory titles (web)": web._speller}
    rng = random.Random(args.seed)
    print(f"== {args.world}: Speller.correct, one core, with and without the one-edit search alternated ==")
    print(f"{'':44} {'p50 ms':>7} {'p90':>6} {'p99':>6} {'mean':>6}")
    limit = linker.ONE_EDIT_POOL
    for label, speller in spellers.items():
        t = time.perf_counter()
        letters = speller._letters
        read_ms = (time.perf_counter() - t) * 1000
        print(f"{label}: {len(speller):,} words; its letters read in {read_ms:.1f} ms")
        rec.figure("words", len(speller), "", world=args.world, speller=label)
        rec.figure("letters read", read_ms, "ms", world=args.world, speller=label)
        for edits in (1, 2):
            words = []
            while len(words) < args.words:
                w = speller.words[rng.randrange(len(speller))]
                if len(w) < 5 or w.isdigit():
                    continue
                for _ in range(edits):
                    w = misspell(w, letters, rng)
                if len(w) >= 4 and w not in speller:
                    words.append(w)
            times: dict[str, list[float]] = {"without": [], "with": []}
            for i, w in enumerate(words):
                answers = {}
                for way in ("without", "with")[:: 1 if i % 2 else -1]:
                    linker.ONE_EDIT_POOL = limit if way == "with" else 1 << 62
                    t = time.perf_counter()
                    answers[way] = speller.correct(w)
                    times[way].append(time.perf_counter() - t)
                if answers["with"] != answers["without"]:
                    raise SystemExit(f"different answers for {w!r}: {answers}")
            linker.ONE_EDIT_POOL = limit
            for way, ts in times.items():
                ms = np.array(ts) * 1000
                p50, p90, p99 = np.percentile(ms, [50, 90, 99])
                name = f"  {edits} edit{'s' if edits > 1 else ''}, {way} the one-edit search"
                print(f"{name:44} {p50:7.2f} {p90:6.2f} {p99:6.2f} {ms.mean():6.2f}")
                at = {"world": args.world, "speller": label, "edits": edits, "words": args.words}
                rec.stats("Speller.correct", {"p50_ms": p50, "p90_ms": p90, "p99_ms": p99, "mean_ms": ms.mean()}, **at,
                          one_edit_search=way)  # fmt: skip
            print(f"  mean without / with: {np.mean(times['without']) / np.mean(times['with']):.2f}x")
            rec.ratio("Speller.correct mean, without / with the one-edit search", np.mean(times["without"]),
                      np.mean(times["with"]), world=args.world, speller=label, edits=edits, words=args.words,
                      against="the same misspellings corrected with the one-edit search, alternated, one core")  # fmt: skip
    print("answers: the same for every word")
    rec.note("answers: the same for every word, with and without the one-edit search")


if __name__ == "__main__":
    main()
