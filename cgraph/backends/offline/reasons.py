"""Reasons as data, rendered to words once: a `Reason` carries its kind and facts; the
text is written from them here and nowhere else (no code reads it back)."""

from __future__ import annotations

from typing import Any

from cgraph.backends.offline.policy import Verdict
from cgraph.runtime.ports import Reason

_TEXTS = {
    "confident": "{best} at {confidence:.0%} (bar {bar:.0%}), ahead of {runner_up} "
    "at {runner_up_confidence:.0%}",
    "unsure": "{best} only at {confidence:.0%} (bar {bar:.0%})",
    "close": "{best} at {confidence:.0%} too close to {runner_up} at {runner_up_confidence:.0%}",
    "stay": "staying at {confidence:.0%}, ahead of {runner_up} at {runner_up_confidence:.0%}",
    "near_stay": "staying at {confidence:.0%} barely ahead of {runner_up} at "
    "{runner_up_confidence:.0%}",
    "nothing_clear": "staying: {best} only at {confidence:.0%}, too unlikely to ask about "
    "(bar {bar:.0%})",
    "global_unsure": "staying: global exit {best} only at {confidence:.0%} (bar {bar:.0%})",
    "irreversible": "{best} at {confidence:.0%} is below the {bar:.0%} an exit that cannot "
    "be taken back needs",
    "confirm": "{best} is to be confirmed before it is taken",
    "only_choice": "{best} at {confidence:.0%} (staying is not allowed)",
    "answer_ordinal": "the answer points to {best} by its place",
    "answer_yes": "the answer confirms {best}",
    "answer_no": "the answer declines {best}",
    "answer_best": "the answer means {best} at {confidence:.0%} among the options asked about",
    "entered": "new here this turn: it says its own line before reading an answer",
    "closed": "the message that led here already says goodbye: {best} at {confidence:.0%}",
    "nothing": "nothing to match",
    "greeting": "only a greeting: asked again",
    "hedge": "the message hedges: asked again",
    "invalid_slot": "an invalid value: asked again",
    "slots_filled": "what the state asks for is given: {best}",
    "slots_given": "what the state asks for is given: it goes on",
    "no_exits": "no exits",
    "only_exit": "the only way out",
    "evidence": "{source} point to {best} (lead {lead:.2f})",
    "no_evidence": "no decisive evidence; first exit",
    "global": "global exit {best} at {confidence:.0%}",
}
_ASKED = " — asked which: {candidates}"


def reason(kind: str, **facts: Any) -> Reason:
    """The reason of `kind` with `facts`, its text written once from them."""
    text = _TEXTS.get(kind, kind).format_map(_Defaults(facts))
    if facts.get("candidates") and facts.get("asked"):
        text += _ASKED.format(candidates=", ".join(facts["candidates"]))
    return Reason(kind, text, tuple((k, v) for k, v in facts.items() if k != "asked"))


def of_verdict(verdict: Verdict, *, asked: bool) -> Reason:
    facts = {
        "best": verdict.best,
        "confidence": round(verdict.confidence, 3),
        "runner_up": verdict.runner_up,
        "runner_up_confidence": round(verdict.runner_up_confidence, 3),
        "bar": round(verdict.bar, 3),
        "candidates": verdict.candidates,
    }
    return reason(verdict.kind, **facts, asked=asked)


class _Defaults(dict[str, Any]):
    def __missing__(self, key: str) -> str:
        return "?"
