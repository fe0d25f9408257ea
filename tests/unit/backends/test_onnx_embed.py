"""The default model prepared once per machine: the same vectors, cached, and a fallback."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from cgraph.backends.onnx_embed import (
    STALE,
    OnnxEncoder,
    needs_preparing,
    onnx_model_path,
    prepared_model,
    prepared_path,
    sweep,
    tokenizer_path,
)
from cgraph.backends.onnx_prepare import fold_int8, optimise

pytestmark = pytest.mark.slow  # real `cgraph` processes, models or Chroma


TEXTS = ["No side effects, I feel fine.", "My card was stolen on the tram.", "hello"]
LONGER = [*TEXTS, "Can I change my flight to tomorrow morning, please? " * 12, "ok", "¿Qué tal?"]


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


@pytest.mark.slow
def test_the_prepared_model_is_the_one_onnx_runtime_folds_itself_bit_for_bit(
    cache: Path, tmp_path: Path
) -> None:
    packaged = onnx_model_path()
    (tmp_path / "folded").mkdir()
    assert fold_int8(packaged, tmp_path / "folded" / "model.onnx") == 38  # every weight
    by_runtime = tmp_path / "runtime" / "model.onnx"
    by_runtime.parent.mkdir()
    optimise(packaged, by_runtime)  # ONNX Runtime's own constant folding
    theirs = OnnxEncoder(by_runtime, tokenizer_path(), prepared=True).encode(LONGER)
    ours = OnnxEncoder(prepared_model(packaged), tokenizer_path(), prepared=True).encode(LONGER)
    assert ours.tobytes() == theirs.tobytes()


def test_a_file_that_is_no_model_is_left_as_it_is(cache: Path, tmp_path: Path) -> None:
    broken = tmp_path / "pkg" / "model.onnx"
    broken.parent.mkdir()
    broken.write_bytes(b"\xff\xff not protobuf")
    with pytest.raises(ValueError, match="not an ONNX model"):
        fold_int8(broken, tmp_path / "out.onnx")
    assert prepared_model(broken) == broken
    assert list(cache.iterdir()) == []  # no half-prepared folder left


def test_only_old_leftovers_of_a_preparation_are_swept(cache: Path) -> None:
    old, young = cache / ".preparing-old", cache / ".preparing-young"
    for folder in (old, young):
        (folder / "folded").mkdir(parents=True)
        (folder / "folded" / "model.onnx.data").write_bytes(b"\0" * 100)
    past = time.time() - STALE - 60
    os.utime(old, (past, past))
    sweep(cache)
    assert [p.name for p in cache.iterdir()] == [young.name]  # a racing run's is kept
