"""World directories in format ``fictionworld/1``: manifest.json + entities/facts Parquet.

Entities and facts refer to each other by stable string ids (``person:42``); in memory they
are row numbers. Loading checks the format, the columns, the counts and the content hash,
and reports any problem as one :class:`WorldFormatError` line.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
from itertools import chain
from pathlib import Path
from typing import Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr, ValidationError

from fictionworld.dates import NA_DATE
from fictionworld.digests import DIGEST, DigestsOnRead, check_digests, file_digests
from fictionworld.reading import WorldFormatError, lazy_tables, read_table, read_tables, unreadable
from fictionworld.schema import PREDICATES
from fictionworld.spec import WorldSpec
from fictionworld.tables import NA_INT, TYPE_NAMES, FactTable
from fictionworld.world import FORMAT, UNITS, World

__all__ = ["WorldFormatError", "save_world", "load_world", "read_manifest", "file_digests", "DIGEST"]

FORMAT_NAME, FORMAT_VERSION = FORMAT.split("/")
FORMAT_VERSION_INT = int(FORMAT_VERSION)

ENTITY_SCHEMA = pa.schema(
    [
        ("id", pa.string()),
        ("type", pa.dictionary(pa.int16(), pa.string())),
        ("name", pa.string()),
        ("aliases", pa.list_(pa.string())),
        ("culture", pa.dictionary(pa.int8(), pa.string())),
        ("namesake_group", pa.int32()),
    ]
)
FACT_COLUMNS = (
    "id",
    "subject",
    "predicate",
    "object",
    "value_int",
    "value_float",
    "value_date",
    "value_text",
    "unit",
    "start",
    "end",
    "source",
)


def _dict_array(codes: np.ndarray, values: list[str], index_type=pa.int32()) -> pa.DictionaryArray:
    return pa.DictionaryArray.from_arrays(pa.array(codes, type=index_type), pa.array(values, pa.string()))


def _entity_table(world: World) -> pa.Table:
    e = world.entities
    return entity_rows_table(e, sorted(set(e.culture.tolist())))


def entity_rows_table(e, cultures: list[str]) -> pa.Table:
    """Rows of ``entities.parquet`` for the entity table ``e`` (the whole world's, or a run of
    it), its culture column coded over ``cultures`` (the whole world's, sorted)."""
    code = {c: i for i, c in enumerate(cultures)}
    return pa.Table.from_arrays(
        [
            pa.array(e.ids.tolist(), pa.string()),
            _dict_array(e.type_code.astype(np.int16), list(TYPE_NAMES), pa.int16()),
            pa.array(e.name.tolist(), pa.string()),
            string_lists(e.aliases),
            _dict_array(np.array([code[c] for c in e.culture.tolist()], np.int8), cultures, pa.int8()),
            pa.array(e.namesake_group, pa.int32(), mask=e.namesake_group < 0),
        ],
        schema=ENTITY_SCHEMA,
    )


def string_lists(rows) -> pa.ListArray:
    """Tuples (or lists) of strings, one per row, as an Arrow list column: the same column as
    ``pa.array([list(r) for r in rows], pa.list_(pa.string()))`` without a Python list made per
    row (that took 0.84 s of writing a 1M world's entities). ``rows`` may also be an Arrow
    list column (a null row an empty list): its values are taken as they are."""
    if isinstance(rows, pa.Array | pa.ChunkedArray):
        sizes = pc.list_value_length(rows).fill_null(0).to_numpy(zero_copy_only=False).astype(np.int32)
        flat = pc.list_flatten(rows)
        values = (flat.combine_chunks() if isinstance(flat, pa.ChunkedArray) else flat).cast(pa.string())
    else:
        sizes = np.fromiter(map(len, rows), np.int32, len(rows))
        values = pa.array(list(chain.from_iterable(rows)), pa.string())
    offsets = np.zeros(len(sizes) + 1, np.int32)
    np.cumsum(sizes, out=offsets[1:])
    return pa.ListArray.from_arrays(pa.array(offsets), values)


ENTITY_ROW_GROUP = 1 << 20  # (Parquet's default)
FACT_ROW_GROUP = 1 << 20
FACT_SLICE = 4 * FACT_ROW_GROUP  # rows per Arrow table written (a few row groups each)


def _fact_tables(world: World, rows: int = FACT_SLICE):
    """The facts as Arrow tables of ``rows`` rows each (a multiple of the row group), so that
    writing a world of any size holds one slice in Arrow at a time."""
    f = world.facts
    ids = pa.array(world.entities.ids.tolist(), pa.string())
    for lo in range(0, max(len(f), 1), rows):
        sl = slice(lo, lo + rows)
        part = FactTable(**{c: getattr(f, c)[sl] for c in _FACT_FIELDS}, sources=f.sources)
        yield fact_rows_table(part, ids.take, f.sources)


_FACT_FIELDS = [c.name for c in dataclasses.fields(FactTable) if c.name != "sources"]
_UNITS = sorted({u for u in UNITS.values() if u})
_UNIT_CODE = np.array([_UNITS.index(UNITS[p]) if UNITS.get(p) else -1 for p in PREDICATES], np.int32)


def fact_rows_table(f, ids_of, sources) -> pa.Table:
    """Rows of ``facts.parquet`` for the fact table ``f`` (the world's, or a run of it);
    ``ids_of(rows)``: the entity ids of ascending entity rows (an Arrow array), as an Arrow
    string array; ``sources``: the world's source names, which ``f.source`` codes."""
    uc, obj = _UNIT_CODE[f.predicate], f.object
    return pa.Table.from_arrays(
        [
            pa.array(f.id, pa.int64()),
            _used_ids(f.subject, ids_of),
            _dict_array(f.predicate.astype(np.int16), list(PREDICATES), pa.int16()),
            _used_ids(obj, ids_of),
            pa.array(f.v_int, pa.int64(), mask=f.v_int == NA_INT),
            pa.array(f.v_float, pa.float64(), mask=np.isnan(f.v_float)),
            pa.array(f.v_date, pa.date32(), mask=f.v_date == NA_DATE),
            pa.array(f.v_text.tolist(), pa.string()),
            pa.DictionaryArray.from_arrays(pa.array(uc, pa.int32(), mask=uc < 0), pa.array(_UNITS, pa.string())),
            pa.array(f.start, pa.date32(), mask=f.start == NA_DATE),
            pa.array(f.end, pa.date32(), mask=f.end == NA_DATE),
            pa.DictionaryArray.from_arrays(
                pa.array(f.source.astype(np.int16), pa.int16()), pa.array(list(sources) or [""], pa.string())
            ),
        ],
        names=list(FACT_COLUMNS),
    )


def _used_ids(rows: np.ndarray, ids_of) -> pa.ChunkedArray:
    """Entity ids of ``rows`` (-1: none) as a dictionary column, one chunk per row group of
    :data:`FACT_ROW_GROUP` rows, each over the ids its own rows use (the tables written start on
    a row group). Parquet writes a chunk's dictionary with every row group that holds part of
    it, and a reader decodes it whole: over a whole slice (4 row groups), a 10M world's row
    group of subjects carried 3.4-4.2M ids for the 1M its rows use at most, and read in 1.33 s
    against 0.15 s over its own (``benchmarks/BIG_WORLDS.md``, "Row groups that carry only their
    own ids")."""
    parts = [_used_ids_of(rows[lo : lo + FACT_ROW_GROUP], ids_of) for lo in range(0, max(len(rows), 1), FACT_ROW_GROUP)]
    return pa.chunked_array(parts, pa.dictionary(pa.int32(), pa.string()))


def _used_ids_of(rows: np.ndarray, ids_of) -> pa.DictionaryArray:
    used, codes = np.unique(rows, return_inverse=True)
    missing = rows < 0
    if len(used) and used[0] < 0:  # -1 sorts first; its code is masked out
        used, codes = used[1:], codes - 1
    return pa.DictionaryArray.from_arrays(
        pa.array(codes.astype(np.int32), pa.int32(), mask=missing), ids_of(pa.array(used))
    )


def _write_facts(world: World, path: Path) -> None:
    writer = None
    try:
        for t in _fact_tables(world, FACT_SLICE):
            if writer is None:
                writer = pq.ParquetWriter(path, t.schema, compression="zstd")
            writer.write_table(t, row_group_size=FACT_ROW_GROUP)
    finally:
        if writer is not None:
            writer.close()


def save_world(world: World, path: str | Path, *, overwrite: bool = False, web: bool = True) -> Path:
    """Write ``world`` to directory ``path``, with its web (pages and search index) unless
    ``web=False``. The manifest is written last, so a directory without one is an interrupted
    save, never mistaken for a world."""
    path = Path(path)
    if world.path is not None and path.exists() and world.path.resolve() == path.resolve():
        raise FileExistsError(f"{path} is the directory this world was loaded from; save it elsewhere")
    if path.exists() and any(path.iterdir()):
        if not overwrite:
            raise FileExistsError(f"{path} exists and is not empty (pass overwrite=True / --force)")
        if not (path / "manifest.json").exists():
            raise FileExistsError(f"{path} is not empty and is not a world directory; refusing to overwrite")
        shutil.rmtree(path)
    path.mkdir(parents=True, exist_ok=True)
    tmp = path / ".writing"
    tmp.mkdir()
    pq.write_table(_entity_table(world), tmp / "entities.parquet", compression="zstd", row_group_size=ENTITY_ROW_GROUP)
    _write_facts(world, tmp / "facts.parquet")
    for name in ("entities.parquet", "facts.parquet"):
        os.replace(tmp / name, path / name)
    tmp.rmdir()
    if web:
        world.web.save(path)
    write_manifest(
        path,
        seed=world.seed,
        spec=world.spec,
        generators=world.generators,
        entities=len(world.entities),
        facts=len(world.facts),
        by_type=world.counts(),
        by_predicate=world.predicate_counts(),
        world_hash=world.world_hash,
        files=file_digests(path),
    )
    return path


def write_manifest(
    path: Path,
    *,
    seed: int,
    spec: WorldSpec,
    generators: dict,
    entities: int,
    facts: int,
    by_type: dict,
    by_predicate: dict,
    world_hash: str,
    files: dict,
) -> None:
    """``path/manifest.json``, written whole (through a temporary file)."""
    manifest = {
        "format": FORMAT,
        "seed": int(seed),
        "spec": spec.model_dump(mode="json"),
        "generators": generators,
        "counts": {"entities": entities, "facts": facts, "by_type": by_type, "by_predicate": by_predicate},
        "world_hash": world_hash,
        "files": files,
        "created_by": _created_by(),
    }
    (path / "manifest.json.tmp").write_text(json.dumps(manifest, indent=2, sort_keys=False))
    os.replace(path / "manifest.json.tmp", path / "manifest.json")


def _created_by() -> str:
    from fictionworld._version import __version__

    return f"fictionworld {__version__}"


def read_manifest(path: str | Path) -> dict:
    path = Path(path)
    if not path.exists():
        raise WorldFormatError(f"{path}: no such directory")
    if not path.is_dir():
        raise WorldFormatError(f"{path}: not a directory (a world is a directory with manifest.json)")
    mf = path / "manifest.json"
    if not mf.exists():
        raise WorldFormatError(f"{path}: not a fictionworld world (no manifest.json)")
    try:
        manifest = json.loads(mf.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise WorldFormatError(
            f"{mf}: not valid JSON (truncated or corrupt?): {exc.msg if hasattr(exc, 'msg') else exc}"
        ) from None
    fmt = manifest.get("format") if isinstance(manifest, dict) else None
    if not isinstance(fmt, str) or "/" not in fmt or fmt.split("/")[0] != FORMAT_NAME:
        raise WorldFormatError(f"{path}: foreign format {fmt!r}; this reads {FORMAT}")
    version = fmt.split("/", 1)[1]
    if not (version.isascii() and version.isdigit()):  # ("²".isdigit() is true, and int() refuses it)
        raise WorldFormatError(f"{path}: unknown format version {fmt!r}; this reads {FORMAT}")
    if int(version) > FORMAT_VERSION_INT:
        raise WorldFormatError(
            f"{path}: format {fmt} is newer than this fictionworld reads ({FORMAT}); upgrade fictionworld"
        )
    if int(version) < FORMAT_VERSION_INT:
        raise WorldFormatError(f"{path}: format {fmt} is older than {FORMAT}; regenerate the world")
    try:
        _ManifestShape.model_validate(manifest)
    except ValidationError as exc:
        from fictionworld.errors import problem_lines

        raise WorldFormatError(f"{mf}: " + "; ".join(problem_lines(exc))) from None
    return manifest


class _Counts(BaseModel):
    model_config = ConfigDict(extra="allow")
    entities: StrictInt = Field(ge=0)
    facts: StrictInt = Field(ge=0)


class _ManifestShape(BaseModel):
    """What a manifest's fields must be, for a clear error naming ``manifest.json`` rather than
    a bare TypeError wherever a field of the wrong type is first used. (``spec`` is checked by
    :class:`~fictionworld.spec.WorldSpec` when the world is loaded; ``files`` by the digests.)"""

    model_config = ConfigDict(extra="allow")
    seed: StrictInt = Field(ge=0)
    spec: dict
    counts: _Counts
    world_hash: StrictStr
    generators: dict[str, object] = {}
    files: dict[str, dict] | None = None


VerifyMode = Literal["content", "files", "on-read", "none"]


def _verify_mode(verify: bool | str) -> VerifyMode:
    if verify is True or verify == "content":
        return "content"
    if verify is False or verify == "none":
        return "none"
    if verify in ("files", "on-read"):
        return verify
    raise ValueError(f"verify must be True, False, 'content', 'files', 'on-read' or 'none', not {verify!r}")


def load_world(path: str | Path, *, verify: bool | str = True) -> World:
    """Read a world directory, checking what ``verify`` says:

    - ``True`` / ``"content"``: recompute the content hash from every entity and fact (seconds
      per million entities; the world is read whole);
    - ``"files"``: compare each data file's digest with the manifest's, at disk speed (a
      manifest without digests falls back to ``"content"``);
    - ``"on-read"``: as ``"files"``, but each file's digest is compared before its first column
      is read, not now (its size is checked now). What a search server wants: its searches read
      the web, never the graph, so it answers its first without reading the graph's 1 GB at 10M
      entities, and whatever later reads the graph reads it checked;
    - ``False`` / ``"none"``: trust the content (the manifest, row counts and file footers are
      still checked).

    Without ``"content"`` the tables are read lazily, a column at a time on first use, so a
    server opening a big world answers its first search without reading the graph."""
    path = Path(path)
    mode = _verify_mode(verify)
    manifest = read_manifest(path)
    try:
        spec = WorldSpec.model_validate(manifest["spec"])
    except ValidationError as exc:
        from fictionworld.errors import problem_lines

        problems = "; ".join(problem_lines(exc, what="spec field", model=WorldSpec))
        raise WorldFormatError(f"{path}/manifest.json: invalid spec: {problems}") from None
    if mode in ("files", "on-read") and not isinstance(manifest.get("files"), dict):
        mode = "content"
    check = None
    if mode == "files":
        check_digests(path, manifest["files"])
    elif mode == "on-read":
        check = DigestsOnRead(path, manifest["files"])
    counts = manifest["counts"]
    if mode == "content":
        ent = read_table(path, "entities.parquet", tuple(ENTITY_SCHEMA.names), ["type", "culture"])
        facts = read_table(path, "facts.parquet", FACT_COLUMNS, [])
        check_counts(path, ent.num_rows, facts.num_rows, counts)
        entities, fact_table = read_tables(path, ent, facts)
    else:
        n_ent = footer_rows(path, "entities.parquet", tuple(ENTITY_SCHEMA.names))
        n_facts = footer_rows(path, "facts.parquet", FACT_COLUMNS)
        check_counts(path, n_ent, n_facts, counts)
        entities, fact_table = lazy_tables(path, n_ent, n_facts, before_read=check)
    world = World(
        spec=spec,
        seed=int(manifest["seed"]),
        entities=entities,
        facts=fact_table,
        generators=manifest.get("generators", {}),
    )
    if mode == "content":
        if world.world_hash != manifest["world_hash"]:
            raise WorldFormatError(f"{path}: content does not match the manifest's world_hash (modified or corrupt)")
    else:
        world.__dict__["world_hash"] = manifest["world_hash"]  # checked by digest, or trusted
    world.path = path
    return world


def check_counts(path: Path, entities: int, facts: int, counts: dict) -> None:
    if entities != counts.get("entities") or facts != counts.get("facts"):
        raise WorldFormatError(
            f"{path}: row counts ({entities} entities, {facts} facts) differ from "
            f"the manifest ({counts.get('entities')}, {counts.get('facts')}): truncated or modified"
        )


def footer_rows(path: Path, name: str, columns: tuple[str, ...]) -> int:
    """Row count of a Parquet file, from its footer (which must read, with every column)."""
    file = path / name
    if not file.exists():
        raise WorldFormatError(f"{path}: {name} is missing")
    try:
        meta = pq.ParquetFile(file).metadata
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise unreadable(file, exc) from None
    names = set(meta.schema.to_arrow_schema().names)
    missing = [c for c in columns if c not in names]
    if missing:
        raise WorldFormatError(f"{file}: missing columns {missing}")
    return meta.num_rows
