"""The features of one choice: a row of numbers per candidate (each exit, and staying).

The scorer (`scorer`) turns each row into a logit and the logits into a probability per
candidate (a softmax: a conditional logit), so a row holds what tells its candidate apart:

- an exit: how near the message is to its examples (or, without examples, its stand-ins:
  the description said by the user), its description, and the dialogue acts it means —
  measured on the message's point (`reading.focus`), on the whole message, on each clause
  and on what a self-correction ends on; how nearly the message says an example word for
  word, names and numbers aside (`words.verbatim`); how far it leads the next exit;
  whether the message denies what the exit affirms (`denial`), answers yes or no the way the exit
  means, shares its words, asks a question it does not expect; whether the exit is global,
  ends the conversation or cannot be taken back, crossed with the message's cues (for a
  global exit a cry for help, a plain well-being, "I feel fine", and a question; a close,
  "not leaving yet"; for a step that cannot be taken back, a question, a hedge, a yes
  taken back, something else first);
- staying: how near the message is to the conversational moves and to the state's own
  texts, and the cues that say a message answers nothing yet (a hedge, a greeting alone,
  a question, a denial, the opening message), with the best exit's nearness for scale.

Cues that hold for the whole message sit on the staying row only: in a softmax a value
shared by every row cancels out, so on staying's row it weighs staying against every exit.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from cgraph.backends.offline import reading as rd
from cgraph.backends.offline.calibration import Calibration
from cgraph.backends.offline.lexicon import LEXICON as lx
from cgraph.backends.offline.options import (
    affirmed_description,
    counts_as_answer,
    ends_conversation,
    means_no,
    sign_for,
    stand_ins,
)
from cgraph.backends.offline.words import overlaps, said, verbatim
from cgraph.runtime.ports import STAY, ExitOption, Question

Embed = Callable[[Sequence[str]], "np.ndarray"]
"""Unit vectors for texts, one row per text (the chooser's embedder, cached per text)."""

EXIT_FEATURES = (
    "ex_focus",
    "ex_whole",
    "ex_clause",
    "ex_last",
    "desc",
    "stand",
    "acts",
    "has_examples",
    "clash",
    "denial",
    "answer_match",
    "answer_mismatch",
    "overlap",
    "verbatim",
    "unasked_question",
    "lead",
    "is_best",
    "rel_whole",
    "rel_clause",
    "rel_last",
    "rel_desc",
    "rel_stand",
    "rel_overlap",
    "rel_denial",
    "rel_verbatim",
    "is_global",
    "global_urgent",
    "global_well",
    "global_question",
    "global_topic",
    "ending",
    "ending_closes",
    "ending_not_leaving",
    "ending_question",
    "irreversible",
    "corrected_last",
    "focus_squared",
    "clause_squared",
    "far",
    "global_far",
    "global_near",
    "ending_near",
    "irreversible_near",
    "irreversible_question",
    "irreversible_hedge",
    "irreversible_corrects",
    "irreversible_more",
)
STAY_FEATURES = (
    "stay",
    "moves",
    "own",
    "own_question",
    "best_exit",
    "denies_elsewhere",
    "hedge",
    "greeting",
    "question",
    "request",
    "opening",
    "short",
    "words",
    "leading_no",
    "leading_yes",
    "negated",
    "closes",
    "not_leaving",
    "urgent",
    "corrects",
)
NAMES = EXIT_FEATURES + STAY_FEATURES
"""Every feature, in the order of a row and of the scorer's weights."""
DEFAULT = Calibration()


@dataclass(frozen=True, slots=True)
class Rows:
    """The candidates of a choice (exit ids, then `stay` when allowed) and their rows."""

    ids: tuple[str, ...]
    matrix: np.ndarray
    """One row per candidate, `NAMES` long."""
    nearness: dict[str, float]
    """Per exit, its nearness to the message (the `ex_focus` feature), for the reason."""


@dataclass(frozen=True, slots=True)
class OptionTexts:
    """What an exit is matched on: its examples (or stand-ins), its stand-ins, the
    utterances of the acts it means, its description with and without negators."""

    examples: tuple[str, ...]
    stand_ins: tuple[str, ...]
    acts: tuple[str, ...]
    description: str
    affirmed: str


def rows(
    question: Question,
    texts: dict[str, OptionTexts],
    embed: Embed,
    calibration: Calibration = DEFAULT,
) -> Rows:
    """The feature rows of an action question (its newest message against its options);
    `calibration`'s reading constants (`far`, `denied_near`) shape two of them."""
    raw = question.user_messages[-1] if question.user_messages else ""
    message = rd.without_greeting(raw)
    cues = _cues(message, raw, question)
    vectors = _vectors(message, question, texts, embed)
    far = calibration.far
    exit_rows = [_exit_row(o, message, cues, texts, vectors, far) for o in question.options]
    _ranks(exit_rows)
    _denials(message, question.options, texts, vectors, exit_rows)
    _answers(message, question.options, exit_rows)
    _overlaps(message, question.options, texts, exit_rows)
    _relative(exit_rows)
    own = vectors.near(message, question.stay_prototypes)
    for row in exit_rows:  # a global exit against a message on the state's own topic
        row["global_topic"] = row["is_global"] * own
    ids = tuple(o.id for o in question.options)
    matrix = [_pad(r, stay=False) for r in exit_rows]
    nearness = {o.id: r["ex_focus"] for o, r in zip(question.options, exit_rows, strict=True)}
    if question.allow_stay:
        best = max((r["ex_focus"] for r in exit_rows), default=0.0)
        stay = _stay_row(message, cues, question, vectors, best)
        # A denial about none of the exits ("no side effects" where the state asks whether
        # the patient is ready) answers something else than this state asks.
        denied = max((abs(r["denial"]) for r in exit_rows), default=0.0)
        stay["denies_elsewhere"] = stay["negated"] * max(0.0, calibration.denied_near - denied)
        matrix.append(_pad(stay, stay=True))
        ids += (STAY,)
    return Rows(ids, np.array(matrix, dtype=float), nearness)


class _Vectors:
    """The texts of one choice embedded in one batch, and their similarities."""

    def __init__(self, texts: list[str], embed: Embed) -> None:
        unique = list(dict.fromkeys(t for t in texts if t))
        self._index = {t: i for i, t in enumerate(unique)}
        self._matrix = embed(unique) if unique else np.zeros((0, 1))

    def near(self, text: str, others: Sequence[str]) -> float:
        """The highest cosine similarity of `text` to any of `others` (0 with none)."""
        rows = [self._index[o] for o in others if o in self._index]
        if text not in self._index or not rows:
            return 0.0
        return float(np.max(self._matrix[rows] @ self._matrix[self._index[text]]))


def _vectors(
    message: str, question: Question, texts: dict[str, OptionTexts], embed: Embed
) -> _Vectors:
    wanted = [*rd.message_texts(message), rd.last_clause(message)]
    wanted += [*lx.CONVERSATIONAL, *lx.WELL, *question.stay_prototypes]
    for option in question.options:
        known = texts[option.id]
        wanted += [*known.examples, *known.stand_ins, *known.acts, known.description]
        wanted.append(known.affirmed)
    return _Vectors(wanted, embed)


@dataclass(frozen=True, slots=True)
class _Cues:
    focus: str
    parts: tuple[str, ...]
    last: str
    sign: int
    question: bool
    closes: bool
    not_leaving: bool
    urgent: bool
    corrects: bool
    hedge: bool
    more: bool
    raw: str


def _cues(message: str, raw: str, question: Question) -> _Cues:
    return _Cues(
        focus=rd.focus(message),
        parts=tuple(rd.urgent_parts(message)),
        last=rd.last_clause(message),
        sign=rd.polarity(rd.focus(message)),
        question=rd.is_question(message) and not rd.is_request(message),
        closes=rd.closes(message),
        not_leaving=rd.not_leaving(message),
        urgent=rd.cries_for_help(message),
        corrects=rd.corrects_itself(message),
        hedge=rd.is_hedge(message),
        more=rd.adds_more(message),
        raw=raw,
    )


def _exit_row(
    option: ExitOption,
    message: str,
    cues: _Cues,
    texts: dict[str, OptionTexts],
    vectors: _Vectors,
    far: float,
) -> dict[str, float]:
    known = texts[option.id]
    matched = known.examples + known.acts
    best = max(matched, key=lambda e: vectors.near(cues.focus, [e]), default="")
    ending = float(ends_conversation(option) or option.target == "END")
    row = {
        "ex_focus": vectors.near(cues.focus, matched),
        "ex_whole": vectors.near(message, matched),
        "ex_clause": max(vectors.near(p, matched) for p in cues.parts),
        "ex_last": vectors.near(cues.last, matched),
        "desc": vectors.near(cues.focus, [known.description]),
        "stand": vectors.near(cues.focus, known.stand_ins),
        "acts": vectors.near(cues.focus, known.acts),
        "has_examples": float(bool(option.examples)),
        "verbatim": max(verbatim(message, matched), verbatim(cues.focus, matched)),
        "clash": abs(rd.polarity(best) - cues.sign) / 2 if best else 0.0,
        "unasked_question": float(not counts_as_answer(message, option)),
        "is_global": float(option.anywhere),
        "global_urgent": float(option.anywhere and cues.urgent),
        # "I feel fine" lies near "I feel terrible" in an embedding: a global exit (an
        # emergency, a crisis) weighs a plain well-being, and a question about one, apart.
        "global_well": float(option.anywhere) * vectors.near(cues.focus, lx.WELL),
        "global_question": float(option.anywhere and cues.question),
        "ending": ending,
        "ending_closes": ending * cues.closes,
        "ending_not_leaving": ending * cues.not_leaving,
        "ending_question": ending * cues.question,
        "irreversible": float(option.irreversible),
    }
    row["corrected_last"] = row["ex_last"] * cues.corrects
    # Nearness counts more the nearer it is, below `far` it hardly means anything, and a
    # global exit, an ending or an exit that cannot be taken back may need more of it than
    # the state's own ways on.
    row["focus_squared"] = row["ex_focus"] ** 2
    row["clause_squared"] = row["ex_clause"] ** 2
    row["far"] = max(0.0, far - row["ex_clause"])
    row["global_far"] = row["is_global"] * row["far"]
    row["global_near"] = row["is_global"] * row["ex_clause"]
    row["ending_near"] = ending * row["ex_clause"]
    row["irreversible_near"] = row["irreversible"] * row["ex_clause"]
    # A step that cannot be taken back is taken on a clear yes only: not on a question
    # ("sure?"), a hedge, a yes taken back or given twice ("no wait, yes") or a yes with
    # something else first ("yes but first, what's my balance").
    row["irreversible_question"] = row["irreversible"] * cues.question
    row["irreversible_hedge"] = row["irreversible"] * cues.hedge
    row["irreversible_corrects"] = row["irreversible"] * cues.corrects
    row["irreversible_more"] = row["irreversible"] * cues.more
    return row


def _ranks(exit_rows: list[dict[str, float]]) -> None:
    """Each exit's lead over the best other exit, on its nearness."""
    for row in exit_rows:
        others = [r["ex_focus"] for r in exit_rows if r is not row]
        row["lead"] = row["ex_focus"] - max(others, default=0.0)
        row["is_best"] = float(row["lead"] > 0)


_RELATIVE = {
    "rel_whole": "ex_whole",
    "rel_clause": "ex_clause",
    "rel_last": "ex_last",
    "rel_desc": "desc",
    "rel_stand": "stand",
    "rel_overlap": "overlap",
    "rel_denial": "denial",
    "rel_verbatim": "verbatim",
}


def _relative(exit_rows: list[dict[str, float]]) -> None:
    """Each exit's measures less the best other exit's: what sets it apart."""
    for row in exit_rows:
        others = [r for r in exit_rows if r is not row]
        for name, measure in _RELATIVE.items():
            row[name] = row[measure] - max((r[measure] for r in others), default=0.0)


def _denials(
    message: str,
    options: Sequence[ExitOption],
    texts: dict[str, OptionTexts],
    vectors: _Vectors,
    exit_rows: list[dict[str, float]],
) -> None:
    """What the message's negations say of each exit: positive when the exit affirms what
    the user denies ("I have side effects" for "no side effects"), negative when it denies
    it too, scaled by how near the denied phrase is (0 without negation)."""
    phrases = rd.denied_phrases(rd.contrast_focus(message))
    for option, row in zip(options, exit_rows, strict=True):
        plain = texts[option.id].affirmed
        near = [(vectors.near(p, [plain]), p) for p in phrases]
        best, phrase = max(near, default=(0.0, ""))
        row["denial"] = sign_for(phrase, option.description) * max(0.0, best) if phrase else 0.0


def _answers(
    message: str, options: Sequence[ExitOption], exit_rows: list[dict[str, float]]
) -> None:
    """Whether the message opens with the answer the exit means (a no for an exit that
    means no), at a state that offers both."""
    negative = [means_no(o) for o in options]
    lead = rd.leading_answer(message)
    both = len(set(negative)) == 2 and lead != 0
    for no, row in zip(negative, exit_rows, strict=True):
        match = both and (lead < 0) == no
        row["answer_match"] = float(match)
        row["answer_mismatch"] = float(both and not match)


def _overlaps(
    message: str,
    options: Sequence[ExitOption],
    texts: dict[str, OptionTexts],
    exit_rows: list[dict[str, float]],
) -> None:
    groups = {o.id: (o.description, *texts[o.id].examples) for o in options}
    shared = overlaps(said(message, rd.denied_phrases), groups)
    for option, row in zip(options, exit_rows, strict=True):
        row["overlap"] = shared[option.id]


def _stay_row(
    message: str, cues: _Cues, question: Question, vectors: _Vectors, best: float
) -> dict[str, float]:
    own = vectors.near(message, question.stay_prototypes)
    words = len(message.split())
    return {
        "stay": 1.0,
        "moves": vectors.near(message, lx.CONVERSATIONAL),
        "own": own,
        "own_question": own * cues.question,
        "best_exit": best,
        "hedge": float(rd.is_hedge(message)),
        "greeting": float(rd.is_greeting(cues.raw)),
        "question": float(cues.question),
        "request": float(rd.is_request(message) or lx.REQUEST_CUE.match(message) is not None),
        "opening": float(question.opening),
        "short": float(words <= 2),
        "words": math.log1p(words),
        "leading_no": float(rd.leading_answer(message) < 0),
        "leading_yes": float(rd.leading_answer(message) > 0),
        "negated": float(bool(rd.denied_phrases(message))),
        "closes": float(cues.closes),
        "not_leaving": float(cues.not_leaving),
        "urgent": float(cues.urgent),
        "corrects": float(cues.corrects),
    }


def _pad(row: dict[str, float], *, stay: bool) -> list[float]:
    """The row in `NAMES` order: an exit's row has zeros where staying's features go."""
    own = STAY_FEATURES if stay else EXIT_FEATURES
    return [row[name] if name in own else 0.0 for name in NAMES]


def option_texts(option: ExitOption, acts: tuple[str, ...]) -> OptionTexts:
    """What `option` is matched on (`acts`: the utterances of the acts it means)."""
    standing = stand_ins(option.description)
    return OptionTexts(
        examples=option.examples or standing,
        stand_ins=standing,
        acts=acts,
        description=option.description,
        affirmed=affirmed_description(option.description),
    )
