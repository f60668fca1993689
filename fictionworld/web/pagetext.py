"""Page text compressed page by page, with one zstd dictionary for the whole web.

A saved ``pages.arrow`` keeps each page's text as its own zstd frame (a ``large_binary``
column), so one page is read by decompressing one frame, and the file is about 3.8 times
smaller than its text (measured on a 1M world: 20,000 pages trained a 110 KiB dictionary;
without one, frames are 2.0 times smaller). At 10M entities the text was 13.1 of the file's
18.1 GiB, more than the page cache of a 24 GiB machine could keep beside the index; a search
reads ten pages' text for its snippets, so a fresh process paid for disk reads. A page
decompresses in about 1.4 µs.

The dictionary is trained (fastCOVER with fixed parameters: the same samples give the same
bytes) on the texts of evenly spaced pages of the final order, so a web has the same bytes
whatever the shards that rendered it. It is kept in the file's schema metadata, base64:
the file carries everything needed to read it. Frames name their dictionary (zstd's dict id),
so a file whose dictionary and frames do not belong together fails on the first page read.

In memory, a rendered :class:`~fictionworld.web.pages.PageTable` keeps plain text (its
``text`` column is a string column); compression happens as pages are written.
"""

from __future__ import annotations

import base64
import threading
from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from fictionworld.reading import WorldFormatError
from fictionworld.web.strings import Strings

__all__ = [
    "CODEC",
    "TextCodec",
    "Texts",
    "sample_rows",
    "stored_schema",
    "codec_of",
]

CODEC = "zstd"  # the value of META_CODEC in a saved pages file's schema
META_CODEC = b"fictionworld.text-codec"
META_DICT = b"fictionworld.text-dict"  # base64 of the zstd dictionary; empty when trained on too little
DICT_BYTES = 112_640  # 110 KiB: zstd's default dictionary size (3.80x at 10M; a 1 MiB one gained little)
SAMPLES = 20_000  # pages the dictionary is trained on
LEVEL = 3  # zstd's default level: 2.3 µs a page; level 9 gained 4 % for 2.5 times the time
_TRAIN = {"k": 1000, "d": 8}  # fixed fastCOVER parameters: 0.1 s at 20,000 pages (optimising them took 6 s for 0.5 %)
_MIN_DICT = 4096  # below this the samples are too few for a dictionary worth having


def sample_rows(n: int) -> np.ndarray:
    """The rows whose texts train the dictionary of a web of ``n`` pages: evenly spaced."""
    return np.unique(np.linspace(0, n - 1, min(n, SAMPLES)).astype(np.int64)) if n else np.zeros(0, np.int64)


def stored_schema(schema: pa.Schema, codec: TextCodec) -> pa.Schema:
    """``schema`` with its ``text`` column as zstd frames, and the codec in its metadata."""
    i = schema.get_field_index("text")
    return schema.set(i, pa.field("text", pa.large_binary())).with_metadata(codec.metadata())


def codec_of(schema: pa.Schema, name: str = "pages.arrow") -> TextCodec | None:
    """The codec a saved pages file's schema names, or None for a file of plain text (written
    before text was compressed); ValueError for a codec that cannot be read."""
    meta = schema.metadata or {}
    kind = schema.field("text").type if "text" in schema.names else None
    if META_CODEC not in meta:
        if kind == pa.large_binary():
            raise ValueError(f"{name}: page text is binary but the file names no codec")
        return None
    if meta[META_CODEC] != CODEC.encode() or kind != pa.large_binary():
        raise ValueError(f"{name}: page text in {meta[META_CODEC]!r} as {kind}; this reads {CODEC} frames")
    try:
        raw = base64.b64decode(meta.get(META_DICT, b""), validate=True)
        return TextCodec(raw or None)
    except Exception as e:  # binascii.Error, zstd.ZstdError
        raise ValueError(f"{name}: its text dictionary is unreadable ({e})") from None


class TextCodec:
    """A web's zstd dictionary (or none) and the frames made with it."""

    def __init__(self, dictionary: bytes | None):
        import zstandard as zstd

        self.raw = dictionary
        self._dict = zstd.ZstdCompressionDict(dictionary, dict_type=zstd.DICT_TYPE_FULLDICT) if dictionary else None
        if self._dict is not None and not self._dict.dict_id():
            raise ValueError("not a zstd dictionary")
        self._local = threading.local()  # a decompressor per thread: zstd contexts are not thread-safe

    def __reduce__(self):  # (pickled as its dictionary: a process makes its own contexts)
        return TextCodec, (self.raw,)

    @classmethod
    def train(cls, samples: Sequence[str]) -> TextCodec:
        """The codec for a web whose :func:`sample_rows` texts are ``samples``: a dictionary of
        up to DICT_BYTES, or none when they are too little text for one."""
        import zstandard as zstd

        data = [s.encode() for s in samples]
        size = min(DICT_BYTES, sum(map(len, data)) // 10)
        if size < _MIN_DICT or len(data) < 100:
            return cls(None)
        try:
            trained = zstd.train_dictionary(size, data, level=LEVEL, **_TRAIN)
        except zstd.ZstdError:  # (samples too alike or too short for fastCOVER)
            return cls(None)
        return cls(trained.as_bytes())

    def metadata(self) -> dict[bytes, bytes]:
        return {META_CODEC: CODEC.encode(), META_DICT: base64.b64encode(self.raw or b"")}

    def compress(self, column: pa.Array | pa.ChunkedArray, threads: int = 1) -> pa.Array:
        """Every string of ``column`` (no nulls) as its own frame, one ``large_binary`` array;
        ``threads`` compress at once (the frames do not depend on it)."""
        import zstandard as zstd

        if isinstance(column, pa.ChunkedArray):
            column = column.combine_chunks()
        if column.null_count:
            raise ValueError(f"page text with {column.null_count} nulls")
        column = column.cast(pa.large_string())
        n = len(column)
        if not n:
            return pa.array([], pa.large_binary())
        offsets = np.frombuffer(column.buffers()[1], np.int64)[column.offset : column.offset + n + 1]
        segments = np.empty((n, 2), np.uint64)
        segments[:, 0] = offsets[:-1]
        segments[:, 1] = np.diff(offsets)
        # (a checksum per frame, 4 bytes: a corrupt page is an error, not wrong text)
        cctx = zstd.ZstdCompressor(level=LEVEL, dict_data=self._dict, write_checksum=True)
        frames = cctx.multi_compress_to_buffer(zstd.BufferWithSegments(column.buffers()[2], segments.tobytes()),
                                               threads=threads)  # fmt: skip
        return pa.array([frames[i].tobytes() for i in range(n)], pa.large_binary())

    def decompress(self, frame: bytes) -> str:
        return self._decompressor().decompress(frame).decode()

    def head(self, frame, lines: int, step: int = 4096) -> str:
        """The first ``lines`` lines of ``frame``'s text, read ``step`` bytes at a time."""
        out, seen = bytearray(), 0  # (newlines counted in each piece as it comes)
        with self._decompressor().stream_reader(frame) as reader:
            while seen < lines:
                got = reader.read(step)
                if not got:
                    break
                out += got
                seen += got.count(b"\n")
        end = 0 if lines <= 0 else -1  # where the lines end (-1: the whole text); "\n" is one byte in UTF-8
        for _ in range(lines):
            end = out.find(b"\n", end + 1)
            if end < 0:
                break
        return (out if end < 0 else out[:end]).decode()

    def _decompressor(self):
        d = getattr(self._local, "d", None)
        if d is None:
            import zstandard as zstd

            d = self._local.d = zstd.ZstdDecompressor(dict_data=self._dict)
        return d


class Texts(Sequence):
    """The pages' text over a column of zstd frames (memory-mapped or not): ``texts[i]``
    decompresses one page; nothing is built per page up front."""

    __slots__ = ("codec", "arr", "_frames", "name")

    def __init__(self, column: pa.Array | pa.ChunkedArray, codec: TextCodec, name: str = "pages.arrow"):
        self.codec, self.arr, self.name = codec, column, name
        self._frames = Strings(column, what=f"{name} column 'text'")  # (each chunk's offsets checked when first read)

    def __len__(self) -> int:
        return len(self._frames)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        frame = self._frame(i).as_py()
        try:
            return self.codec.decompress(frame)
        except Exception as e:  # zstd.ZstdError, UnicodeDecodeError, a null frame
            raise WorldFormatError(f"{self.name}: page {i}'s text is corrupt ({e})") from None

    def head(self, i: int, lines: int) -> str:
        """The first ``lines`` lines of page ``i`` (all of it if it has fewer), decompressing
        only as far as they go (so the frame's checksum, at its end, is not read)."""
        frame = self._frame(i).as_buffer()
        try:
            return self.codec.head(frame, lines)
        except Exception as e:  # zstd.ZstdError, UnicodeDecodeError, a null frame
            raise WorldFormatError(f"{self.name}: page {i}'s text is corrupt ({e})") from None

    def _frame(self, i: int):
        return self._frames.scalar(i)

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    def take(self, rows) -> list[str]:
        return [self[int(i)] for i in rows]
