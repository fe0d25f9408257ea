"""The offline chooser: exits chosen by a fitted scorer over embeddings and word cues.

No language model is involved. For an action state the newest user message is read into
a row of features per candidate — each exit, and staying (`features`) — which the fitted
scorer turns into a confidence per candidate (`scorer`); the ask policy takes the best
exit, stays, or asks which of a few exits the user meant (`policy`), naming them from their
descriptions (`asking`). A message that entered the state this turn (and is not the
conversation's opening) stays: it already answered the state before; but in a closing
state (every exit of its own ends the conversation) a message that already takes that
exit ends it ("No, that's all. Thanks, bye!": one goodbye, not two).

Silent states (decisions, reflections, conditional starts) weigh the session's findings
(annotation tags) first, then the recent user messages (`silent`). Slots are read from the
message by type (`slots`); what is worth remembering is the user's own statements
(`memories`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from cgraph.backends.embed import Embedder, cosine, shared_embedder
from cgraph.backends.offline import answers, features, scorer
from cgraph.backends.offline.asking import clarifying_question
from cgraph.backends.offline.calibration import Calibration
from cgraph.backends.offline.lexicon import LEXICON as lx
from cgraph.backends.offline.lexicon import with_declared
from cgraph.backends.offline.memories import extract_memories
from cgraph.backends.offline.options import as_user, lent_acts
from cgraph.backends.offline.policy import answer, decide
from cgraph.backends.offline.reading import is_question
from cgraph.backends.offline.reasons import of_verdict, reason
from cgraph.backends.offline.silent import decide_silently
from cgraph.backends.offline.slots import extract, refusals
from cgraph.backends.offline.warming import first_turn_texts
from cgraph.errors import CgraphError, ConfigError
from cgraph.runtime.ports import CLARIFY, STAY, Choice, ExitOption, Question
from cgraph.spec.model import Graph, Tier
from cgraph.spec.names import END


@dataclass(frozen=True, slots=True)
class Scored:
    """A question's candidates with their confidences and nearness (for `/why`)."""

    confidence: dict[str, float]
    nearness: dict[str, float]


PREPARE_SECONDS = 120.0
"""How long `prepare` waits for the embedding model: a warm-up, not a condition of serving."""
_STILL_LOADING: set[int] = set()
"""The embedders (shared, by id) `prepare` gave up waiting for: not waited for again."""


class OfflineChooser:
    """An `ExitChooser` that needs no language model (see the module docstring).

    `embedder`: the sentence embedder (default: the process-wide one of
    `embedding_model`, the packaged MiniLM when ""); `calibration`: the ask policy's bars
    (default: those fitted with the shipped weights)."""

    name = "semantic"
    """The model name that selects it (`--model semantic`)."""

    def __init__(
        self,
        embedder: Embedder | None = None,
        calibration: Calibration | None = None,
        embedding_model: str = "",
        *,
        weights: scorer.Scorer | None = None,
        acts: Mapping[str, Any] | None = None,
    ) -> None:
        self._embedder = embedder
        self._embedding_model = embedding_model
        self.scorer = weights or scorer.packaged(features.NAMES)
        self.calibration = calibration or Calibration.fitted(self.scorer.calibration)
        self._texts: dict[ExitOption, features.OptionTexts] = {}
        self.acts = with_declared(lx.ACTS, acts or {})
        """The dialogue acts: the shipped ones, under the graph's own (`acts:`)."""
        self._acts: np.ndarray | None = None

    @property
    def embedder(self) -> Embedder:
        """The embedder given, else the shared one of the graph's `embedding_model`."""
        if self._embedder is None:
            self._embedder = shared_embedder(self._embedding_model)
        return self._embedder

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return np.array(self.embedder.embed(list(texts)), dtype=float)

    def prepare(self, graph: Graph) -> None:
        """Load now what the first turn would (a server, before its first request): the
        embedding model, and the vectors of the texts a first message is compared with."""
        texts, embedder = first_turn_texts(graph), self.embedder
        prime = getattr(embedder, "prime", None)  # the shared one keeps them on disk
        if not callable(prime):
            self.embed(texts)
            return
        if id(embedder) not in _STILL_LOADING:  # one wait for an embedder shared by graphs
            prime(texts).join(PREPARE_SECONDS)
        if not getattr(embedder, "ready", True):
            _STILL_LOADING.add(id(embedder))
            raise CgraphError(f"the embedding model was still loading after {PREPARE_SECONDS:g} s")
        failure = getattr(embedder, "failure", None)
        if failure:
            raise ConfigError(failure)

    # -- the port ---------------------------------------------------------------------------

    def choose(self, question: Question) -> Choice:
        if question.kind == "action":
            return self._action(question)
        confidence = lambda asked: self.score(asked).confidence  # noqa: E731
        return decide_silently(question, confidence, self.calibration.decisive_lead)

    def remember(self, user_messages: Sequence[str]) -> list[tuple[Tier, str]]:
        return [(m["tier"], m["text"]) for m in extract_memories(user_messages)]  # type: ignore[misc]

    # -- action states ------------------------------------------------------------------------

    def _action(self, question: Question) -> Choice:
        just_entered = question.entered_this_turn and not question.opening
        if just_entered and question.user_messages and _closing(question):
            closed = self._closed(question)
            if closed is not None:
                return closed
        if just_entered or not question.user_messages:
            return Choice(STAY, reason("entered" if just_entered else "nothing"))
        if not question.options:
            return self._slots(question, Choice(STAY, reason("nothing")))
        scored = self.score(question)
        verdict = (
            answer(question, scored.confidence, self.calibration) if question.clarifying else None
        )
        verdict = verdict or decide(question, scored.confidence, self.calibration)
        asked = verdict.exit == CLARIFY
        options = {o.id: o for o in question.options}
        named = tuple(options[c] for c in verdict.candidates if c in options)
        choice = Choice(
            verdict.exit,
            of_verdict(verdict, asked=asked),
            confidence={k: round(v, 3) for k, v in scored.confidence.items()},
            candidates=verdict.candidates if asked else (),
            question=clarifying_question(named) if asked else "",
        )
        return self._slots(question, choice)

    def _closed(self, question: Question) -> Choice | None:
        """An exit to END the entering message takes as the policy would take it."""
        scored = self.score(question)
        verdict = decide(question, scored.confidence, self.calibration)
        ends = {o.id for o in question.options if o.target == END}
        if verdict.exit not in ends:
            return None
        facts = {"best": verdict.exit, "confidence": round(verdict.confidence, 3)}
        confidence = {k: round(v, 3) for k, v in scored.confidence.items()}
        return Choice(verdict.exit, reason("closed", **facts), confidence=confidence)

    def score(self, question: Question) -> Scored:
        """The confidence of each candidate of an action question (exits and `stay`)."""
        texts = {o.id: self.option_texts(o) for o in question.options}
        rows = features.rows(question, texts, self.embed, self.calibration)
        probabilities = self.scorer.probabilities(rows.matrix)
        confidence = {k: float(p) for k, p in zip(rows.ids, probabilities, strict=True)}
        return Scored(confidence, rows.nearness)

    def option_texts(self, option: ExitOption) -> features.OptionTexts:
        """What `option` is matched on, worked out once per option."""
        key = replace(option, target="", anywhere=False, irreversible=False, confirm=False)
        if key not in self._texts:
            self._texts[key] = features.option_texts(option, self._lent(option.description))
        return self._texts[key]

    def _lent(self, description: str) -> tuple[str, ...]:
        """The examples of the dialogue acts `description` means."""
        if self._acts is None:
            self._acts = self.embed([act.description for act in self.acts])
        mine = self.embed([as_user(description)])[0]
        near = dict(zip(self.acts, self._acts @ mine, strict=True))
        floor, shift = self.calibration.act_floor, self.calibration.act_floor_shift
        lent = lent_acts(self.acts, description)
        acts = [a for a in lent if near[a] >= (floor if a.floor is None else a.floor) + shift]
        return tuple(u for act in acts for u in act.examples)

    # -- slots --------------------------------------------------------------------------------

    def _slots(self, question: Question, choice: Choice) -> Choice:
        if not question.slots:
            return choice
        found = extract(
            question.slots,
            question.collect,
            question.user_messages[-1],
            closest=self.closest,
            yes_no=lambda _message, description: self.yes_or_no(question, description),
            enum_threshold=self.calibration.enum_threshold,
            missing=question.missing,
        )
        said = refusals(question.slots, found)
        # Every value read is returned: the runtime refuses what its slot does not accept,
        # records why, and asks again with `rejected` set, when the refusal is said.
        values = {k: v for k, v in found.items() if k in question.slots}
        choice = replace(choice, slots=values)
        anywhere = {o.id for o in question.options if o.anywhere}
        # The state's way on: not a global exit, nor one that leaves before it is answered.
        own = [o for o in question.options if not o.early]
        valid = {k for k in values if k not in said}
        filled = bool(question.collect) and all(n in valid for n in question.collect)
        # A list being built (`append:`) is never complete: the user says when it is.
        complete = filled and not question.appends
        if complete and len(own) == 1 and choice.exit in (STAY, CLARIFY):
            # What the state asks for is given: its one way on is taken.
            return replace(choice, exit=own[0].id, reason=reason("slots_filled", best=own[0].id))
        # Exits that leave before the state is answered: the global ones, and the state's
        # own `early` ones unless the message is a question (an aside such as "are you
        # open at 5?" asks; an answer such as "we are 3" gives).
        aside = is_question(question.user_messages[-1])
        early = {o.id for o in question.options if o.anywhere or (o.early and not aside)}
        if valid & set(question.collect) and choice.exit in early:
            # A message that gives what this state asks for answers this state first
            # ("yes please", "the 2:30 one", "we are 3"), however near such an exit its
            # words fall.
            return replace(choice, exit=STAY, reason=reason("slots_given"), candidates=())
        if filled and choice.exit == CLARIFY:
            # The message answers the state: it goes on (its `when:` exits), not asked about
            # an exit it did not mean.
            return replace(choice, exit=STAY, reason=reason("slots_given"), candidates=())
        refused = set(said) & set(question.collect)
        if not question.rejected or not refused or choice.exit in anywhere:
            return choice
        preface = " ".join(said.values())
        return replace(choice, exit=STAY, reason=reason("invalid_slot"), reply="", preface=preface)

    def yes_or_no(self, question: Question, description: str) -> bool | None:
        """The answer the question's newest message gives to a boolean slot so described:
        True or False only when the ask policy would take it without asking (`answers`)."""
        if not answers.may_answer(question.user_messages[-1]):
            return None
        asked = replace(
            question,
            options=answers.options(description),
            allow_stay=True,
            clarifying=(),
            may_clarify=True,
        )
        verdict = decide(asked, self.score(asked).confidence, self.calibration)
        return answers.VALUES.get(verdict.exit) if verdict.kind == "confident" else None

    def closest(self, message: str, values: Sequence[str]) -> tuple[str, float]:
        """The value most similar to the message (offline enum slots)."""
        vectors = self.embedder.embed([message, *values])
        scores = [cosine(vectors[0], v) for v in vectors[1:]]
        best = max(range(len(values)), key=scores.__getitem__)
        return values[best], scores[best]

    def describe(self) -> dict[str, Any]:
        """What the shipped weights were fitted on, with their figures."""
        return dict(self.scorer.about)


def semantic(
    rest: str = "",
    *,
    embedding_model: str = "",
    acts: Mapping[str, Any] | None = None,
    **options: Any,
) -> OfflineChooser:
    """The `semantic` entry of the model table. Provider options (api_base, temperature,
    ...) mean nothing offline and are ignored; `embedding_model` and `acts` are the graph's
    own."""
    del rest, options
    return OfflineChooser(embedding_model=embedding_model, acts=acts)


def _closing(question: Question) -> bool:
    """A state whose own exits all end the conversation (a goodbye state)."""
    own = [o for o in question.options if not o.anywhere]
    return bool(own) and all(o.target == END for o in own)
