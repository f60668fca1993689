"""World directories in format ``fictionworld/1``: manifest.json + entities/facts Parquet.

Entities and facts refer to each other by stable string ids (``person:42``); in memory they
are row numbers. Loading checks the format, the columns, the counts and the content hash,
and reports any problem as one :class:`WorldFormatError` line.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pydantic import ValidationError

from fictionworld.dates import NA_DATE
from fictionworld.schema import PREDICATES
from fictionworld.spec import WorldSpec
from fictionworld.tables import NA_INT, TYPE_NAMES, EntityTable, FactTable
from fictionworld.world import FORMAT, UNITS, World

__all__ = ["WorldFormatError", "save_world", "load_world", "read_manifest"]

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


class WorldFormatError(Exception):
    """A world directory that cannot be read: missing, truncated, foreign or too new."""


def _dict_array(codes: np.ndarray, values: list[str], index_type=pa.int32()) -> pa.DictionaryArray:
    return pa.DictionaryArray.from_arrays(pa.array(codes, type=index_type), pa.array(values, pa.string()))


def _entity_table(world: World) -> pa.Table:
    e = world.entities
    cultures = sorted(set(e.culture.tolist()))
    code = {c: i for i, c in enumerate(cultures)}
    return pa.Table.from_arrays(
        [
            pa.array(e.ids.tolist(), pa.string()),
            _dict_array(e.type_code.astype(np.int16), list(TYPE_NAMES), pa.int16()),
            pa.array(e.name.tolist(), pa.string()),
            pa.array([list(a) for a in e.aliases.tolist()], pa.list_(pa.string())),
            _dict_array(np.array([code[c] for c in e.culture.tolist()], np.int8), cultures, pa.int8()),
            pa.array(e.namesake_group, pa.int32(), mask=e.namesake_group < 0),
        ],
        schema=ENTITY_SCHEMA,
    )


def _fact_table(world: World) -> pa.Table:
    f, ids = world.facts, world.entities.ids.tolist()
    units = sorted({u for u in UNITS.values() if u})
    unit_code = np.array([units.index(UNITS[p]) if UNITS.get(p) else -1 for p in PREDICATES], np.int32)
    uc = unit_code[f.predicate]
    obj = f.object
    return pa.Table.from_arrays(
        [
            pa.array(f.id, pa.int64()),
            _dict_array(f.subject, ids),
            _dict_array(f.predicate.astype(np.int16), list(PREDICATES), pa.int16()),
            pa.DictionaryArray.from_arrays(pa.array(obj, pa.int32(), mask=obj < 0), pa.array(ids, pa.string())),
            pa.array(f.v_int, pa.int64(), mask=f.v_int == NA_INT),
            pa.array(f.v_float, pa.float64(), mask=np.isnan(f.v_float)),
            pa.array(f.v_date, pa.date32(), mask=f.v_date == NA_DATE),
            pa.array(f.v_text.tolist(), pa.string()),
            pa.DictionaryArray.from_arrays(pa.array(uc, pa.int32(), mask=uc < 0), pa.array(units, pa.string())),
            pa.array(f.start, pa.date32(), mask=f.start == NA_DATE),
            pa.array(f.end, pa.date32(), mask=f.end == NA_DATE),
            _dict_array(f.source.astype(np.int16), list(f.sources) or [""], pa.int16()),
        ],
        names=list(FACT_COLUMNS),
    )


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
    pq.write_table(_entity_table(world), tmp / "entities.parquet", compression="zstd")
    pq.write_table(_fact_table(world), tmp / "facts.parquet", compression="zstd", row_group_size=1 << 20)
    for name in ("entities.parquet", "facts.parquet"):
        os.replace(tmp / name, path / name)
    tmp.rmdir()
    if web:
        world.web.save(path)
    manifest = {
        "format": FORMAT,
        "seed": world.seed,
        "spec": world.spec.model_dump(mode="json"),
        "generators": world.generators,
        "counts": {
            "entities": len(world.entities),
            "facts": len(world.facts),
            "by_type": world.counts(),
            "by_predicate": world.predicate_counts(),
        },
        "world_hash": world.world_hash,
        "created_by": _created_by(),
    }
    (path / "manifest.json.tmp").write_text(json.dumps(manifest, indent=2, sort_keys=False))
    os.replace(path / "manifest.json.tmp", path / "manifest.json")
    return path


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
    if not version.isdigit():
        raise WorldFormatError(f"{path}: unknown format version {fmt!r}; this reads {FORMAT}")
    if int(version) > FORMAT_VERSION_INT:
        raise WorldFormatError(
            f"{path}: format {fmt} is newer than this fictionworld reads ({FORMAT}); upgrade fictionworld"
        )
    if int(version) < FORMAT_VERSION_INT:
        raise WorldFormatError(f"{path}: format {fmt} is older than {FORMAT}; regenerate the world")
    for key in ("seed", "spec", "counts", "world_hash"):
        if key not in manifest:
            raise WorldFormatError(f"{mf}: missing field {key!r}")
    return manifest


def _read(path: Path, name: str, columns: tuple[str, ...], dictionary: list[str]) -> pa.Table:
    file = path / name
    if not file.exists():
        raise WorldFormatError(f"{path}: {name} is missing")
    try:
        table = pq.read_table(file, read_dictionary=dictionary)
    except (pa.ArrowException, OSError, ValueError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise WorldFormatError(f"{file}: unreadable (truncated or corrupt?): {first}") from None
    missing = [c for c in columns if c not in table.column_names]
    if missing:
        raise WorldFormatError(f"{file}: missing columns {missing}")
    return table


def _codes(
    col: pa.ChunkedArray, vocabulary: list[str] | pa.Array, what: str, file: str, allow_null=False
) -> np.ndarray:
    """Map a (dictionary or plain) string column onto indices of ``vocabulary``."""
    col = col.cast(pa.string()) if not pa.types.is_string(col.type) else col
    vocab = vocabulary if isinstance(vocabulary, pa.Array) else pa.array(vocabulary, pa.string())
    idx = pc.index_in(col, value_set=vocab)
    unknown = pc.and_(pc.is_null(idx), pc.is_valid(col))
    if pc.any(unknown).as_py():
        bad = pc.filter(col, unknown)[0].as_py()
        raise WorldFormatError(f"{file}: unknown {what} {bad!r} (corrupt or foreign file)")
    if not allow_null and col.null_count:
        raise WorldFormatError(f"{file}: {what} column has empty cells (corrupt)")
    return idx.to_numpy(zero_copy_only=False)


def load_world(path: str | Path, *, verify: bool = True) -> World:
    """Read a world directory. ``verify`` recomputes the content hash against the manifest."""
    path = Path(path)
    manifest = read_manifest(path)
    try:
        spec = WorldSpec.model_validate(manifest["spec"])
    except ValidationError as exc:
        from fictionworld.errors import problem_lines

        problems = "; ".join(problem_lines(exc, what="spec field", model=WorldSpec))
        raise WorldFormatError(f"{path}/manifest.json: invalid spec: {problems}") from None
    ent = _read(path, "entities.parquet", tuple(ENTITY_SCHEMA.names), ["type", "culture"])
    facts = _read(path, "facts.parquet", FACT_COLUMNS, [])
    counts = manifest["counts"]
    if ent.num_rows != counts.get("entities") or facts.num_rows != counts.get("facts"):
        raise WorldFormatError(
            f"{path}: row counts ({ent.num_rows} entities, {facts.num_rows} facts) differ from "
            f"the manifest ({counts.get('entities')}, {counts.get('facts')}): truncated or modified"
        )
    try:
        entities = _entities_from(ent, path)
        fact_table = _facts_from(facts, entities, path)
    except (pa.ArrowException, ValueError, TypeError, KeyError) as exc:
        raise WorldFormatError(
            f"{path}: malformed content: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}"
        ) from None
    world = World(
        spec=spec,
        seed=int(manifest["seed"]),
        entities=entities,
        facts=fact_table,
        generators=manifest.get("generators", {}),
    )
    if verify and world.world_hash != manifest["world_hash"]:
        raise WorldFormatError(f"{path}: content does not match the manifest's world_hash (modified or corrupt)")
    world.path = path
    return world


def _entities_from(t: pa.Table, path: Path) -> EntityTable:
    file = f"{path}/entities.parquet"
    type_code = _codes(t.column("type"), list(TYPE_NAMES), "entity type", file).astype(np.int16)
    id_col = t.column("id")
    parts = pc.extract_regex(id_col, r"^(?P<t>[a-z_]+):(?P<n>[0-9]{1,9})$")
    if parts.null_count:
        bad = pc.filter(id_col, pc.is_null(parts))[0].as_py()
        raise WorldFormatError(f"{file}: malformed entity id {bad!r}")
    id_type = _codes(pc.struct_field(parts, "t"), list(TYPE_NAMES), "entity type in id", file)
    if not np.array_equal(id_type, type_code):
        k = int(np.flatnonzero(id_type != type_code)[0])
        raise WorldFormatError(
            f"{file}: entity id {id_col[k].as_py()!r} does not match its type {TYPE_NAMES[type_code[k]]}"
        )
    local = pc.cast(pc.struct_field(parts, "n"), pa.int32()).to_numpy(zero_copy_only=False)
    if t.column("name").null_count:
        raise WorldFormatError(f"{file}: entity without a name")
    aliases = np.empty(t.num_rows, dtype=object)
    aliases[:] = [tuple(a) if a else () for a in t.column("aliases").to_pylist()]
    culture = t.column("culture").cast(pa.string()).fill_null("").to_numpy(zero_copy_only=False).astype(object)
    group = t.column("namesake_group").fill_null(-1).to_numpy().astype(np.int32)
    name = t.column("name").to_numpy(zero_copy_only=False).astype(object)
    table = EntityTable(
        type_code=type_code,
        local=local.astype(np.int32),
        name=name,
        aliases=aliases,
        culture=culture,
        namesake_group=group,
    )
    table.__dict__["ids"] = id_col.to_numpy(zero_copy_only=False).astype(object)  # prime the cached ids
    return table


def _int_col(t: pa.Table, name: str, na, dtype) -> np.ndarray:
    col = t.column(name)
    if pa.types.is_date32(col.type):
        col = col.cast(pa.int32())
    return col.fill_null(na).to_numpy().astype(dtype)


def _facts_from(t: pa.Table, entities: EntityTable, path: Path) -> FactTable:
    file = f"{path}/facts.parquet"
    ids = pa.array(entities.ids.tolist(), pa.string())
    subject = _codes(t.column("subject"), ids, "entity id", file).astype(np.int32)
    obj = _codes(t.column("object"), ids, "entity id", file, allow_null=True)
    obj = np.where(t.column("object").is_null().to_numpy(zero_copy_only=False), -1, obj).astype(np.int32)
    predicate = _codes(t.column("predicate"), list(PREDICATES), "predicate", file).astype(np.int16)
    sources_col = t.column("source").cast(pa.string())
    sources = sorted(set(pc.unique(sources_col).to_pylist()) - {None})
    source = _codes(sources_col, sources, "source", file).astype(np.int16)
    text = np.empty(t.num_rows, dtype=object)
    text[:] = t.column("value_text").to_pylist()
    return FactTable(
        id=_int_col(t, "id", 0, np.int64),
        subject=subject,
        predicate=predicate,
        object=obj,
        v_int=_int_col(t, "value_int", NA_INT, np.int64),
        v_float=t.column("value_float").fill_null(np.nan).to_numpy().astype(np.float64),
        v_date=_int_col(t, "value_date", int(NA_DATE), np.int32),
        v_text=text,
        start=_int_col(t, "start", int(NA_DATE), np.int32),
        end=_int_col(t, "end", int(NA_DATE), np.int32),
        source=source,
        sources=tuple(sources),
    )
