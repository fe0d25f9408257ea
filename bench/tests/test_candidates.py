"""The bench's loaders of candidate embedding models and its NLI veto (bench only).

The bench's own tests live with it, so nothing under `tests/` imports a bench script;
`make test` runs them too (`testpaths`)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import save_file
from tokenizers import Tokenizer
from tokenizers.models import WordLevel
from tokenizers.pre_tokenizers import Whitespace

from bench.embedding_candidates import embedder
from bench.nli_veto import NliVeto
from cgraph.runtime.ports import STAY, Choice, Question, Reason
from cgraph.testing.labelled import question_for
from tests.support.labelled_sets import LABELS, load_cases


def _static_model(folder: Path) -> Path:
    """A Model2Vec-style folder with vocabulary quantisation: four tokens, two rows."""
    vocab = {"[UNK]": 0, "north": 1, "south": 2, "up": 3}
    tokenizer = Tokenizer(WordLevel(vocab, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = Whitespace()  # type: ignore[assignment]
    tokenizer.save(str(folder / "tokenizer.json"))
    save_file(
        {
            "embeddings": np.array([[1, 0], [0, 1]], dtype=np.int8),
            "mapping": np.array([0, 0, 1, 1], dtype=np.int64),
            "weights": np.array([1.0, 1.0, 3.0, 1.0], dtype=np.float32),
        },
        str(folder / "model.safetensors"),
    )
    return folder


def test_a_static_model_averages_its_weighted_mapped_rows(tmp_path: Path) -> None:
    model = embedder(f"static:{_static_model(tmp_path)}")
    north, south_up = np.array(model.embed(["north", "south up"]))
    assert north == pytest.approx([1.0, 0.0])
    assert south_up == pytest.approx([0.0, 1.0])  # both map to row 1: (3 + 1) / 2, normalised
    mixed = np.array(model.embed(["north south"])[0])
    assert mixed == pytest.approx(np.array([1.0, 3.0]) / np.sqrt(10))


class FirstExit:
    """A chooser that takes the first exit offered (what the veto is asked to correct)."""

    name = "first"

    def choose(self, question: Question) -> Choice:
        return Choice(question.options[0].id if question.options else STAY, Reason("first"))


class Contradicts:
    """A pair classifier that reads every pair whose hypothesis is in `descriptions` as a
    contradiction."""

    def __init__(self, descriptions: set[str]) -> None:
        self.descriptions = descriptions

    def contradiction(self, premise: str, hypothesis: str) -> float:
        return 0.99 if hypothesis in self.descriptions else 0.01


def _action_request() -> Question:
    cases = load_cases(LABELS)
    case = next(c for c in cases if not c.entered and c.state == "medication_adherence_check")
    request = question_for(case)
    assert request.kind == "action" and len(request.options) >= 2
    return request


def test_the_veto_strikes_off_a_contradicted_exit_and_asks_again() -> None:
    request = _action_request()
    first, second = request.options[:2]
    veto = NliVeto(FirstExit(), Contradicts({first.description}), 0.5)  # type: ignore[arg-type]
    assert veto.choose(request).exit == second.id
    kept = NliVeto(FirstExit(), Contradicts({first.description}), 0.995)  # type: ignore[arg-type]
    assert kept.choose(request).exit == first.id


def test_the_veto_stays_when_every_exit_is_contradicted() -> None:
    request = _action_request()
    everything = Contradicts({o.description for o in request.options})
    veto = NliVeto(FirstExit(), everything, 0.5)  # type: ignore[arg-type]
    assert veto.choose(request).exit == STAY
