"""The lexicon of a saved web: what search needs besides pages and index, precomputed.

A world directory's ``lexicon/`` holds the entity linker (its vocabulary, speller keys and
posting arrays), the speller of the web (name words plus the words of directory titles) and
every entity's name and aliases. All of it is memory-mapped when a world is opened, so a
fresh process answers its first search without building anything per entity or per word;
worker processes of ``fictionworld serve`` share the same pages of the page cache.

A web saved without a lexicon (or with one that does not match) still works: the linker is
then built from the world on first use, as before.
"""

from __future__ import annotations

import bisect
import itertools
import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from fictionworld.web.arrow import MappedArrow, write_arrow
from fictionworld.web.linker import EntityLinker, words
from fictionworld.web.speller import Speller, speller_table
from fictionworld.web.strings import Strings

__all__ = [
    "Lexicon",
    "LEXICON_DIR",
    "LEXICON_FORMAT",
    "entity_forms",
    "finish_lexicon",
    "list_titles",
    "web_speller",
    "write_lexicon",
]

LEXICON_DIR = "lexicon"
LEXICON_FORMAT = "fictionworld-lexicon/1"
FORMS_SCHEMA = pa.schema([("name", pa.string()), ("aliases", pa.list_(pa.string()))])


def entity_forms(entities) -> pa.Table:
    """Every entity's name and aliases, by row (an :class:`EntityTable`)."""
    return pa.Table.from_arrays(
        [
            pa.array(entities.name, pa.string()),
            pa.array([list(a) for a in entities.aliases.tolist()], FORMS_SCHEMA.field("aliases").type),
        ],
        schema=FORMS_SCHEMA,
    )


def web_speller(names: Speller, list_titles) -> Speller:
    """The speller of a web: the words of entity names (the linker's speller, ``names``) and of
    directory titles ("Films released in 1998", "Companies in the glassmaking industry")."""
    extra = pa.array(sorted({w for t in list_titles for w in words(t)}), pa.string())
    known = names.words.arr
    chunks = known.chunks if isinstance(known, pa.ChunkedArray) else [known]
    return Speller(table=speller_table(pa.concat_arrays([*chunks, extra])))


def write_lexicon(directory: str | Path, linker: EntityLinker, forms: pa.Table) -> None:
    """Write the linker and the names of a lexicon into ``directory`` (replacing it);
    :func:`finish_lexicon` adds the web's speller and seals it. Both parts are separate
    because a sharded build writes the first beside the rendering, the second at the end."""
    d = Path(directory)
    tmp = d.with_name(d.name + f".tmp{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    linker.save(tmp)
    write_arrow(tmp / "forms.arrow", forms, max_chunksize=1 << 20)
    meta = {"format": LEXICON_FORMAT, "entities": forms.num_rows, "words": len(linker.speller)}
    (tmp / "part.json").write_text(json.dumps(meta))
    shutil.rmtree(d, ignore_errors=True)
    os.replace(tmp, d)


def finish_lexicon(directory: str | Path, speller: Speller, world_hash: str) -> None:
    """Add the web's speller to a lexicon :func:`write_lexicon` wrote, and seal it with the
    world's hash (``meta.json``, written last: a lexicon without it is never read)."""
    d = Path(directory)
    meta = json.loads((d / "part.json").read_text())
    speller.save(d / "web.arrow")
    meta = {**meta, "world_hash": world_hash, "web_words": len(speller)}
    (d / "meta.json").write_text(json.dumps(meta, indent=2) + "\n")
    (d / "part.json").unlink()


@dataclass(eq=False)
class Lexicon:
    linker: EntityLinker
    speller: Speller
    forms: pa.Table

    def __post_init__(self) -> None:
        self.names = Strings(self.forms.column("name"))
        # The aliases are read where they lie, from the batch holding the row: joining the
        # batches into one column (combine_chunks) copied every alias of a 10M world when the
        # lexicon opened, 0.28 GiB read from disk before a fresh process's first answer and
        # kept in its memory.
        self._aliases = self.forms.column("aliases").chunks
        self._alias_starts = list(itertools.accumulate(map(len, self._aliases), initial=0))

    def subject_forms(self, row: int) -> tuple[str, ...]:
        """Entity ``row``'s name and aliases."""
        if not 0 <= row < self._alias_starts[-1]:
            raise IndexError(f"entity row {row} out of range")
        i = bisect.bisect_right(self._alias_starts, row) - 1  # (an empty batch starts where the next does)
        return (self.names[row], *self._aliases[i][row - self._alias_starts[i]].as_py())

    @classmethod
    def open(cls, directory: str | Path, world_hash: str, entities: int) -> Lexicon | None:
        """The lexicon saved in ``directory``, memory-mapped; None when there is none (a web
        saved before lexicons, or an interrupted save). ValueError if it is not this world's."""
        d = Path(directory)
        if not (d / "meta.json").exists():
            return None
        try:
            meta = json.loads((d / "meta.json").read_text())
        except (OSError, json.JSONDecodeError, UnicodeDecodeError) as e:
            raise ValueError(f"{d / 'meta.json'}: unreadable ({e})") from None
        if not isinstance(meta, dict):
            raise ValueError(f"{d / 'meta.json'}: not a JSON object")
        if meta.get("format") != LEXICON_FORMAT:
            raise ValueError(f"{d}: lexicon format {meta.get('format')!r}, this reads {LEXICON_FORMAT}")
        if meta.get("world_hash") != world_hash or meta.get("entities") != entities:
            raise ValueError(f"{d}: the lexicon was built for another world")
        try:
            forms = MappedArrow(d / "forms.arrow", access="normal").table  # (its batch headers asked for at once)
            linker, speller = EntityLinker.open(d), Speller.open(d / "web.arrow")
        except (OSError, pa.ArrowException) as e:
            raise ValueError(f"{d}: unreadable ({str(e).splitlines()[0] if str(e) else type(e).__name__})") from None
        if forms.schema != FORMS_SCHEMA or forms.num_rows != entities or linker.entities != entities:
            raise ValueError(f"{d}: the lexicon does not match the world's {entities:,} entities")
        return cls(linker, speller, forms)


def list_titles(kinds: pa.ChunkedArray, titles: pa.ChunkedArray) -> list[str]:
    """The titles of directory pages (kind "list"), from a page table's two columns."""
    return titles.filter(pc.equal(kinds, "list")).to_pylist()
