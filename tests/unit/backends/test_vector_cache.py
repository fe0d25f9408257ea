"""Graph texts' vectors kept on disk between runs: read back bit for bit, never trusted
when damaged, named by the model they came from."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from cgraph.backends.embed import LocalEmbedder
from cgraph.backends.vector_cache import VectorCache, identity


def float32_vectors(count: int, dimension: int = 384) -> list[list[float]]:
    """Unit vectors as the model hands them out: float32 rows turned into lists."""
    rows = np.random.default_rng(7).standard_normal((count, dimension)).astype(np.float32)
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    return [row.tolist() for row in rows]


def test_vectors_come_back_exactly_as_they_were_computed(tmp_path: Path) -> None:
    cache = VectorCache(tmp_path / "v" / "model.sqlite3", 384)
    texts = ["Yes, I'm ready.", "Not today.", "No chest pain."]
    vectors = dict(zip(texts, float32_vectors(3), strict=True))
    cache.put(vectors)
    again = VectorCache(tmp_path / "v" / "model.sqlite3", 384)
    found = again.get(["Not today.", "never kept", "Yes, I'm ready."])
    assert found == {k: vectors[k] for k in ("Not today.", "Yes, I'm ready.")}
    a, b = found["Not today."], vectors["Not today."]
    assert sum(x * y for x, y in zip(a, b, strict=True)) == sum(x * x for x in b)


def test_a_damaged_or_unwritable_cache_is_no_cache(tmp_path: Path) -> None:
    damaged = tmp_path / "damaged.sqlite3"
    damaged.write_bytes(b"not a database" * 100)
    cache = VectorCache(damaged, 384)
    assert cache.get(["a"]) == {}
    cache.put({"a": float32_vectors(1)[0]})  # no error: the model computes instead
    assert cache.broken
    blocked = VectorCache(damaged / "under-a-file.sqlite3", 384)
    blocked.put({"a": float32_vectors(1)[0]})
    assert blocked.get(["a"]) == {} and blocked.broken


def test_a_vector_of_another_size_is_not_taken(tmp_path: Path) -> None:
    VectorCache(tmp_path / "m.sqlite3", 8).put({"a": [0.5] * 8})
    assert VectorCache(tmp_path / "m.sqlite3", 384).get(["a"]) == {}


def test_the_identity_changes_with_the_files_it_names(tmp_path: Path) -> None:
    model = tmp_path / "model.onnx"
    model.write_bytes(b"weights")
    before = identity("ort-1", model)
    model.write_bytes(b"other weights")
    assert identity("ort-1", model) != before
    assert identity("ort-2", model) != identity("ort-1", model)


class Counting:
    """Stands in for a loaded model: vectors from the text, and a log of what it ran."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    def encode(self, texts: Sequence[str]) -> list[np.ndarray]:
        self.seen += texts
        return [np.full(4, len(t) / 8, dtype=np.float32) for t in texts]


def primed(embedder: LocalEmbedder, texts: list[str]) -> None:
    warming = embedder.prime(texts)
    warming.join(10)
    assert not warming.is_alive()


def test_a_later_run_reads_the_warmed_texts_back_instead_of_computing_them(
    tmp_path: Path,
) -> None:
    path, texts = tmp_path / "vectors.sqlite3", ["Yes, I'm ready.", "Not today."]
    first_model, later_model = Counting(), Counting()
    first = LocalEmbedder(loader=lambda: first_model, disk=lambda: VectorCache(path, 4))
    primed(first, texts)
    message = first.embed(["my private message"])
    later = LocalEmbedder(loader=lambda: later_model, disk=lambda: VectorCache(path, 4))
    primed(later, texts)
    assert later_model.seen == []
    assert later.embed(texts) == first.embed(texts)
    assert VectorCache(path, 4).get(["my private message"]) == {}  # only the graph's texts
    assert later.embed(["my private message"]) == message and later.computed == 1
