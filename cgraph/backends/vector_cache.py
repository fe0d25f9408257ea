"""A graph's embedded texts kept on disk per model, so a later run reads them back.

A first turn of the offline mode compares the message with a few dozen of the graph's
texts (exits, examples, objectives) and a run warms up a few hundred more: a quarter of
a second of the model's time on every start, for texts that only change when the graph
does. `LocalEmbedder.prime` keeps what it computes here and reads it back in the next
run, before the model is even loaded.

Only warmed-up texts are kept (the graph's own words, templates left out), never what a
user said. One SQLite file per model identity (`identity` names the model's files, the
runtime and the code that pools the vectors, so a change of any computes afresh); the
float32 vectors are stored as the model gave them, so a cosine over cached vectors is the
computed one bit for bit. A cache that cannot be read or written is no cache: the model
computes, as without one.
"""

from __future__ import annotations

import contextlib
import hashlib
import sqlite3
from array import array
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

Vector = list[float]
_SCHEMA = "CREATE TABLE IF NOT EXISTS vectors (text TEXT PRIMARY KEY, vector BLOB NOT NULL)"
_CHUNK = 500
"""Texts per query: well under SQLite's limit on bound parameters."""


class VectorCache:
    """Unit vectors by text for one model, in one SQLite file."""

    def __init__(self, path: Path, dimension: int) -> None:
        self.path = path
        self.dimension = dimension
        self.broken = False
        """Set once the file failed; later calls do nothing."""

    @contextlib.contextmanager
    def _db(self) -> Iterator[sqlite3.Connection]:
        if self.broken:
            raise sqlite3.OperationalError("the cache failed before")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.closing(sqlite3.connect(self.path, timeout=2)) as db, db:
            # Several runs may share the file; a lost write is recomputed next time, so
            # the cache never waits for the disk.
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=OFF")
            db.execute(_SCHEMA)
            yield db

    def get(self, texts: Sequence[str]) -> dict[str, Vector]:
        """The cached vectors of `texts` (those not cached are left out)."""
        found: dict[str, Vector] = {}
        wanted = list(dict.fromkeys(texts))
        with self._guard():
            if not self.path.is_file():
                return found
            with self._db() as db:
                for start in range(0, len(wanted), _CHUNK):
                    chunk = wanted[start : start + _CHUNK]
                    marks = ",".join("?" * len(chunk))
                    query = f"SELECT text, vector FROM vectors WHERE text IN ({marks})"
                    for text, blob in db.execute(query, chunk):
                        vector = array("f")
                        vector.frombytes(blob)
                        if len(vector) == self.dimension:
                            found[text] = vector.tolist()
        return found

    def put(self, vectors: Mapping[str, Sequence[float]]) -> None:
        """Keep `vectors` (float32 values, as the model computes them)."""
        rows = [(text, array("f", vector).tobytes()) for text, vector in vectors.items()]
        with self._guard(), self._db() as db:
            db.executemany("INSERT OR REPLACE INTO vectors (text, vector) VALUES (?, ?)", rows)

    @contextlib.contextmanager
    def _guard(self) -> Iterator[None]:
        try:
            yield
        except (sqlite3.Error, OSError, OverflowError):  # a damaged or read-only cache
            self.broken = True


def identity(*parts: str | Path) -> str:
    """A short name for a model's identity: texts as given, files by path, size and time."""
    digest = hashlib.sha256()
    for part in parts:
        if isinstance(part, Path):
            stat = part.stat()
            part = f"{part}:{stat.st_size}:{stat.st_mtime_ns}"
        digest.update(part.encode() + b"\x00")
    return digest.hexdigest()[:24]
