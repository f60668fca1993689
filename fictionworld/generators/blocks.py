"""A world generated as tasks, one per block of entities.

Each generator that makes one type runs once per block of ``spec.generation_block`` entities of
it (a generator of several types, places, runs whole), in causal order; every task reads the
earlier generators' hand-offs (fictionworld/generators/flow.py) whole and hands on its block's rows. A
generator's per-person relations (staff, students, players) then run once per block of people.
The tasks run in this process, in local processes or as Ray tasks (``tasks``: an executor of
fictionworld/executors.py): the world is the same for any of them, and for any number of
workers, because what a block draws depends only on the seed, the spec and its block number.
:func:`generate_blocks` joins the block outputs in memory; with a spool directory
(:func:`run_blocks`, used by :mod:`fictionworld.generators.streamed`) each task writes its data there and
hands back where it lies, so that the world is written to disk without being held whole.

What the blocks share is settled between the rounds of tasks:

- **Names stay distinct across blocks.** A block makes its names distinct among its own; the run
  then hashes every block's names, and where blocks share a name, the entity with the lowest
  index keeps it. Each block with a loser runs again, drawing new names for its losers only
  (:meth:`GenContext.unique`) and avoiding every name taken, until no name is shared.
- **Namesakes pair entities within a block** (``namesake_rate`` of each block).
- **Websites and ISBNs are made unique over the whole world** in entity order, as before.

Block 0 draws from the streams a run without blocks uses, so a type that fits in one block is
generated exactly as before blocks existed."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from fictionworld.generators.base import (
    Block,
    GenContext,
    TypeData,
    WorldGenerator,
    apply_namesakes,
    attribute_facts,
    block_spans,
    child_seed,
    make,
)
from fictionworld.generators.flow import Flow
from fictionworld.generators.naming import name_hashes
from fictionworld.schema import ENTITY_TYPES
from fictionworld.spec import WorldSpec
from fictionworld.tables import TYPE_CODE, EntityTable, FactTable

__all__ = ["BlockOutput", "run_block", "run_blocks", "generate_blocks", "waves", "MAX_NAME_ROUNDS"]

MAX_NAME_ROUNDS = 12  # rounds of re-drawing names shared across blocks before giving up


@dataclass
class BlockOutput:
    """What one task made: its types' data (names, attributes), relation facts with where they
    go in the world's fact order, its rows of the hand-offs, and its names' hashes."""

    types: dict[str, TypeData]
    facts: list[tuple[int, str, str | None, str, FactTable]]  # (call, relation, after, source, facts)
    flow: dict[str, object]  # hand-off slot -> this block's rows of it
    hashes: dict[str, tuple[np.ndarray, np.ndarray]]  # type -> (name hashes, counted: not a namesake copy)


def run_block(
    spec: dict | WorldSpec,
    seed: int,
    gen_id: str,
    phase: str,
    block: Block | None,
    flow: dict,
    reopen: dict,
    spool: str | None = None,
) -> BlockOutput:
    """One task: generator ``gen_id``'s ``phase`` ("main", or "people" for its per-person
    relations) for ``block`` (None: whole), reading the hand-offs ``flow`` (slot -> value or
    shared handle) and re-drawing the names ``reopen`` lists (see :meth:`GenContext.unique`).
    With ``spool`` (a directory), its types' data and its facts go to a file there, and the
    output holds where to read them (:mod:`fictionworld.generators.streamed`) instead of the data."""
    from fictionworld.executors import fetch

    spec = spec if isinstance(spec, WorldSpec) else WorldSpec.model_validate(spec)
    given = Flow(**{k: fetch(v) for k, v in flow.items()})
    ctx = GenContext(spec, seed, block=block, flow=dataclasses.replace(given))
    ctx.reopen = {t: [(np.asarray(s, np.int64), fetch(b)) for s, b in rounds] for t, rounds in reopen.items()}
    g = make(gen_id)
    ctx.source = g.id
    (g.run if phase == "main" else g.people)(ctx)
    made = {f.name: getattr(ctx.flow, f.name) for f in dataclasses.fields(Flow)}
    new_flow = {k: v for k, v in made.items() if v is not None and v is not getattr(given, k)}
    types = {t: ctx.types[t] for t in g.produces} if phase == "main" else {}
    hashes = {}
    if phase == "main" and block is not None:
        d = types[block.type]
        counted = (d.namesake_group < 0) | (d.namesake_group == np.arange(d.start, d.start + d.n))
        hashes[block.type] = (name_hashes(d.names.tolist()), counted)
    records = [(call, rel, after, src, f) for (call, rel, after, src), f in zip(ctx._records, ctx._facts)]
    if spool is not None:
        from fictionworld.generators.streamed import spool_block

        rounds = sum(len(r) for r in reopen.values())
        name = f"{gen_id}.{phase}.{'whole' if block is None else block.index}.{rounds}"
        types, records = spool_block(spool, name, types, records)
    return BlockOutput(types=types, facts=records, flow=new_flow, hashes=hashes)


def _map(tasks, fn, calls: list[tuple]) -> list:
    """``fn`` over ``calls`` on ``tasks``, results in call order."""
    futures = [tasks.submit(fn, *args) for args in calls]
    return [tasks.result(f) for f in futures]


def generate_blocks(
    spec: WorldSpec, seed: int, tasks=None, progress: Callable[[str], None] | None = None
) -> tuple[EntityTable, FactTable, list[WorldGenerator]]:
    """The world's entities and facts, made by block tasks (``tasks``: an executor with
    ``submit``/``result``/``share`` (fictionworld/executors.py), or None to run them here)."""
    steps, main, people = run_blocks(spec, seed, tasks, progress)
    if progress:
        progress("assemble")
    return (*_assemble(spec, seed, steps, main, people), steps)


def run_blocks(
    spec: WorldSpec, seed: int, tasks=None, progress: Callable[[str], None] | None = None, spool: str | None = None
) -> tuple[list[WorldGenerator], dict[str, list[BlockOutput]], dict[str, list[BlockOutput]]]:
    """Every block task, round by round: (the generators in causal order, their main tasks'
    outputs, their per-person tasks' outputs), each output list in block order. With
    ``spool``, the outputs point into files there (see :func:`run_block`)."""
    from fictionworld.executors import LocalTasks
    from fictionworld.generators import plan

    run = LocalTasks(1) if tasks is None else tasks  # one local worker: each task runs here, in turn
    counts = spec.counts()
    size = spec.generation_block
    steps = plan(counts)
    spec_json = spec.model_dump(mode="json")
    flow: dict[str, object] = {}  # slot -> whole value
    shared: dict[str, object] = {}  # slot -> handle
    main: dict[str, list[BlockOutput]] = {}
    people: dict[str, list[BlockOutput]] = {}
    person_blocks = _blocks("person", counts.get("person", 0), size)
    for wave in waves(steps, counts):
        if progress:
            progress(", ".join(g.id for g in wave))
        calls = {g.id: _calls(spec_json, seed, g, "main", _main_blocks(g, counts, size), shared, spool) for g in wave}
        outs = _split(calls, _map(run, run_block, [c for g in wave for c in calls[g.id]]))
        outs = _distinct_names(run, [(g.produces[0], calls[g.id], outs[g.id]) for g in wave if g.blocked], size, outs)
        for g in wave:
            main[g.id] = outs[g.id]
            for slot in {k for o in outs[g.id] for k in o.flow}:
                flow[slot] = _join([o.flow[slot] for o in outs[g.id]])
                shared[slot] = run.share(flow[slot])
        later = [g for g in wave if g.people is not None and "person" in counts]
        calls = {g.id: _calls(spec_json, seed, g, "people", person_blocks, shared, spool) for g in later}
        people.update(_split(calls, _map(run, run_block, [c for g in later for c in calls[g.id]])))
    return steps, main, people


def waves(steps: list[WorldGenerator], counts: dict[str, int]) -> list[list[WorldGenerator]]:
    """The generators in rounds: each after the rounds of the types it reads (``after``), so
    that the tasks of one round run side by side."""
    round_of: dict[str, int] = {}
    out: list[list[WorldGenerator]] = []
    for g in steps:
        r = 1 + max((round_of[t] for t in g.after if t in counts and t not in g.produces), default=-1)
        round_of.update(dict.fromkeys(g.produces, r))
        out += [[] for _ in range(r + 1 - len(out))]
        out[r].append(g)
    return out


def _main_blocks(g: WorldGenerator, counts: dict[str, int], size: int) -> list[Block | None]:
    return _blocks(g.produces[0], counts[g.produces[0]], size) if g.blocked else [None]


def _calls(
    spec_json: dict, seed: int, g: WorldGenerator, phase: str, blocks: list, shared: dict, spool: str | None
) -> list[tuple]:
    return [(spec_json, seed, g.id, phase, b, dict(shared), {}, spool) for b in blocks]


def _split(calls: dict[str, list], results: list) -> dict[str, list]:
    out, i = {}, 0
    for gid, cs in calls.items():
        out[gid], i = results[i : i + len(cs)], i + len(cs)
    return out


def _blocks(t: str, n: int, size: int) -> list[Block]:
    return [Block(t, i, s, k) for i, (s, k) in enumerate(block_spans(n, size))]


def _join(parts: list):
    """One hand-off from its blocks' rows, in block order."""
    if len(parts) == 1:
        return parts[0]
    cls = type(parts[0])

    def joined(name: str):
        arrays = [getattr(p, name) for p in parts]
        return None if all(a is None for a in arrays) else np.concatenate(arrays)

    return cls(**{f.name: joined(f.name) for f in dataclasses.fields(cls)})


def _distinct_names(run, todo: list[tuple[str, list[tuple], list[BlockOutput]]], size: int, outs: dict) -> dict:
    """Run again the blocks whose names other blocks took first, until no two entities of a
    type that are not namesakes share a name (the lowest index keeps it). ``todo``: (type,
    its tasks, their outputs) per generator of the round; the outputs are replaced in place."""
    reopen: dict[tuple[str, int], list] = {}
    for _round in range(MAX_NAME_ROUNDS):
        again = []
        for t, calls, got in todo:
            losers = _losers([o.hashes[t] for o in got])
            if not len(losers):
                continue
            banned = run.share(np.unique(np.concatenate([o.hashes[t][0][o.hashes[t][1]] for o in got])))
            for b in np.unique(losers // size).tolist():
                mine = losers[(losers >= b * size) & (losers < (b + 1) * size)] - b * size
                reopen.setdefault((t, b), []).append((mine, banned))
                spec_json, seed, gen_id, phase, block, flow, _, spool = calls[b]
                again.append((got, b, (spec_json, seed, gen_id, phase, block, flow, {t: list(reopen[(t, b)])}, spool)))
        if not again:
            return outs
        for (got, b, _), out in zip(again, _map(run, run_block, [c for _, _, c in again])):
            got[b] = out
    raise RuntimeError(f"names still shared across blocks after {MAX_NAME_ROUNDS} rounds")


def _losers(hashes: list[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
    """Type-local indices whose name (hash) an entity of lower index has too; namesake copies
    (not counted) excepted."""
    h = np.concatenate([x for x, _ in hashes])
    rows = np.flatnonzero(np.concatenate([c for _, c in hashes]))
    h = h[rows]
    order = np.lexsort((rows, h))
    dup = np.r_[False, h[order][1:] == h[order][:-1]]
    return np.sort(rows[order][dup])


def _assemble(
    spec: WorldSpec, seed: int, steps: list[WorldGenerator], main: dict, people: dict
) -> tuple[EntityTable, FactTable]:
    """The block outputs joined: entities in type and index order (namesakes drawn per block),
    attribute facts, then relation facts in each generator's call order, block by block."""
    parts = _type_parts(spec, seed, steps, main)
    sources: list[str] = []

    def code(src: str) -> int:
        if src not in sources:
            sources.append(src)
        return sources.index(src)

    rel_parts = [
        f.with_values(source=np.full(len(f), code(src), np.int16))
        for g in steps
        for _key, src, f in fact_order(main[g.id], people.get(g.id, []))
    ]
    ent_parts, attr_parts = [], []
    for t, ds in parts.items():
        for d in ds:
            if d.names is None:
                raise RuntimeError(f"no generator produced names for {t}")
            ent_parts.append(entity_part(t, d))
        for a_name in spec.attributes(t):
            if a_name in ds[0].attrs:
                dtype, src = ENTITY_TYPES[t].attribute(a_name).dtype, code(ds[0].source)
                attr_parts.extend(attribute_facts(d, dtype, a_name, d.attrs[a_name], src) for d in ds)
    entities = ent_parts[0]
    for p in ent_parts[1:]:
        entities = entities.concat(p)
    facts = FactTable.concat_all(attr_parts + rel_parts, tuple(sources))
    return entities, facts.with_values(id=np.arange(len(facts), dtype=np.int64))


def _type_parts(spec: WorldSpec, seed: int, steps: list[WorldGenerator], main: dict) -> dict[str, list[TypeData]]:
    """Each type's blocks in type order, with namesakes drawn and websites and ISBNs unique."""
    parts = by_type(spec, steps, main)
    finish = Finish(spec, seed, book_blocks=len(parts.get("book", [])))
    for t, ds in parts.items():
        for i, d in enumerate(ds):
            finish.block(t, i, d)
    return parts


def by_type(spec: WorldSpec, steps: list, main: dict) -> dict[str, list]:
    """What the block tasks made of each type (their ``types[t]``: data, or where a spool holds
    it), block by block, the types in the spec's order."""
    made: dict[str, list] = {}
    for g in steps:
        for o in main[g.id]:
            for t, d in o.types.items():
                made.setdefault(t, []).append(d)
    return {t: made[t] for t in spec.counts() if t in made}


class Finish:
    """What makes a type's blocks final once every block is made, applied a block at a time in
    type, then block order (by the in-memory join and by the streamed writer,
    :mod:`fictionworld.generators.streamed`): namesakes drawn within the block (all but people: the people
    generator keeps namesakes out of families itself), websites unique over the world, and
    ISBNs another block drew first drawn again (where books come in more than one block)."""

    def __init__(self, spec: WorldSpec, seed: int, book_blocks: int):
        self.spec, self.seed = spec, seed
        self.redraw_isbns = book_blocks >= 2
        self.websites: set[str] = set()  # taken so far
        self.isbns: set[str] = set()
        self.rng = isbn_rng(seed)

    def block(self, t: str, i: int, d: TypeData) -> None:
        from fictionworld.generators.works import isbn13

        if t != "person":
            ctx = GenContext(self.spec, self.seed, block=Block(t, i, d.start, d.n))
            ctx.types[t] = d
            apply_namesakes(ctx, t)
        _make_unique([d], "website", _website_again, self.websites)
        if t == "book" and self.redraw_isbns:
            _make_unique([d], "isbn", lambda _first, _k: isbn13(self.rng, 1)[0], self.isbns)


def entity_part(t: str, d: TypeData) -> EntityTable:
    """The entity rows of one block of type ``t``."""
    return EntityTable(
        type_code=np.full(d.n, TYPE_CODE[t], np.int16),
        local=np.arange(d.start, d.start + d.n, dtype=np.int32),
        name=d.names,
        aliases=d.aliases,
        culture=d.culture,
        namesake_group=d.namesake_group,
    )


def fact_order(main: list[BlockOutput], people: list[BlockOutput]):
    """A generator's relation facts in order: its main tasks' calls in call order (block by
    block within a call), each per-person part right after the main calls of the relation it
    follows (``after``), else at the end."""
    last: dict[str, int] = {}
    keyed = []
    for b, o in enumerate(main):
        for call, rel, _after, src, f in o.facts:
            last[rel] = max(last.get(rel, -1), call)
            keyed.append(((call, 0, 0, b), src, f))
    end = max(last.values(), default=-1) + 1
    for b, o in enumerate(people):
        for call, _rel, after, src, f in o.facts:
            keyed.append(((last.get(after, end) if after else end, 1, call, b), src, f))
    keyed.sort(key=lambda x: x[0])
    return keyed


def _website_again(first: str, k: int) -> str:
    """A website taken by an earlier entity (type order, then index) gets ``-2``, ``-3``, …"""
    head, _, tld = first.rpartition(".")
    return f"{head}-{k + 2}.{tld}"


def isbn_rng(seed: int) -> np.random.Generator:
    """The stream that draws ISBNs again (for the ones another block drew first)."""
    return np.random.Generator(np.random.PCG64(child_seed(seed, "isbn/again")))


def _make_unique(
    parts: list[TypeData], attr: str, again: Callable[[str, int], str], seen: set[str] | None = None
) -> None:
    """Values of ``attr`` unique over ``parts`` in order: a value taken already is replaced by
    ``again(value, k)`` for k = 0, 1, … until one is free. ``seen``: the values taken before
    ``parts`` (updated), for parts given one at a time."""
    seen = set() if seen is None else seen
    for d in parts:
        values = d.attrs.get(attr)
        if values is None:
            continue
        for i, first in enumerate(values.tolist()):
            if first is None:
                continue
            x, k = first, 0
            while x in seen:
                x, k = again(first, k), k + 1
            seen.add(x)
            values[i] = x
