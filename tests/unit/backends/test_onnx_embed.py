"""The default model prepared once per machine: the same vectors, cached, and a fallback."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from cgraph.backends.onnx_embed import (
    OnnxEncoder,
    needs_preparing,
    onnx_model_path,
    prepared_model,
    prepared_path,
    tokenizer_path,
)

TEXTS = ["No side effects, I feel fine.", "My card was stolen on the tram.", "hello"]


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("CGRAPH_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.mark.slow
def test_the_prepared_model_gives_the_packaged_models_vectors(cache: Path) -> None:
    packaged = onnx_model_path()
    assert needs_preparing()
    prepared = prepared_model(packaged)
    assert prepared.is_relative_to(cache) and not needs_preparing()
    assert (prepared.parent / f"{prepared.name}.data").stat().st_size > 80_000_000
    ours = OnnxEncoder(prepared, tokenizer_path()).encode(TEXTS)
    theirs = OnnxEncoder(packaged, tokenizer_path()).encode(TEXTS)
    assert abs(ours - theirs).max() < 1e-5
    skipped = OnnxEncoder(prepared, tokenizer_path(), prepared=True).encode(TEXTS)
    assert (skipped == ours).all()  # the runtime's passes skipped: bit for bit the same


@pytest.mark.slow
def test_the_model_is_prepared_once_then_reused(cache: Path) -> None:
    first = prepared_model(onnx_model_path())
    stamp = first.stat().st_mtime_ns
    assert prepared_model(onnx_model_path()) == first
    assert first.stat().st_mtime_ns == stamp
    assert [p.name for p in cache.iterdir()] == [first.parent.name]  # no leftovers


def test_a_cache_that_cannot_be_written_leaves_the_packaged_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("CGRAPH_CACHE", str(blocker / "cache"))
    assert prepared_model(onnx_model_path()) == onnx_model_path()


def test_the_cache_is_named_by_the_runtime_and_the_file(cache: Path) -> None:
    path = prepared_path(onnx_model_path())
    assert path.parent.parent == cache
    assert str(os.path.getsize(onnx_model_path())) in path.parent.name
