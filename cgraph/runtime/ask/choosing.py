"""Choosing an exit: the chooser asked, its choice checked, the decision recorded.

Every choice goes through `decide`, whoever makes it: the offline chooser reads the
question itself, and `ModelChooser` (the runtime's own `ExitChooser` for a language
model) renders the question's prompt with the step's `Prompts` and asks the model
(`exchange.ask`: call, validate, re-ask once), its first attempt a conversation with the
tools when the step hands it one (`Converse`, the tool runner's). The question holds
neither: it is data, and a chooser that reads no prompt never has one rendered. A choice
is never applied as it comes: its exit must be one offered, and its slot values must be
ones their slots accept; a chooser that reads messages itself is asked once more, naming
what was wrong, when a value is refused (a model is re-asked inside `exchange.ask`). No
usable choice gives a `Decided` with no value: the caller falls back. Failures come back
as events, never raised.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from functools import partial
from typing import Any, Protocol

from cgraph.runtime.ask.answers import check_slots
from cgraph.runtime.ask.exchange import Answered, ask
from cgraph.runtime.ask.questions import Posed
from cgraph.runtime.needs import Steps, done
from cgraph.runtime.ports import (
    CLARIFY,
    STAY,
    Capabilities,
    ChatModel,
    Choice,
    ExitChooser,
    LLMRequest,
    Question,
    Reason,
    Trace,
)
from cgraph.runtime.state.outcomes import Emit
from cgraph.runtime.state.records import Decision, trusted

Decided = Answered[Choice]
"""A chooser's checked choice of one question."""
UNPOSED = "a model is asked a question posed with its prompt (`Prompter.pose`, `decide`)"

Converse = Callable[[ChatModel, LLMRequest], Steps[tuple[LLMRequest, str]]]
"""A model's first attempt as a conversation with the tools its request offers
(`cgraph.runtime.tools.calls.converse`, bound to a step): the request as it ended, and
the answer."""


class Prompts(Protocol):
    """Renders a posed question's prompt (`cgraph.runtime.ask.requests.Prompter`)."""

    def request(self, posed: Posed) -> LLMRequest: ...


class ModelChooser:
    """The `ExitChooser` of a language model: the question's prompt, asked and validated."""

    def __init__(self, chat: ChatModel) -> None:
        self.chat = chat
        self.name = chat.name

    @property
    def capabilities(self) -> Capabilities:
        return self.chat.capabilities

    def choose(self, question: Question) -> Choice:
        """Refused: a model reads a prompt, rendered from a posed question (`decide`)."""
        raise ValueError(UNPOSED)

    def steps(
        self, posed: Posed, prompts: Prompts, converse: Converse | None = None
    ) -> Steps[Choice]:
        """The choice, as steps that yield the model calls (`cgraph.runtime.needs`): the
        prompt rendered by `prompts`, the first attempt `converse` when it is given."""
        question = posed.question
        talk = partial(converse, self.chat) if converse is not None else None
        asked = yield from ask(self.chat, prompts.request(posed), talk=talk)
        made = asked.decision
        trace = Trace(
            calls=made.attempts,
            events=tuple((e.kind, dict(e.data)) for e in asked.failures),
            prompt_hash=made.prompt_hash,
            window=made.window,
            summary=made.summary,
        )
        answer = asked.value
        if answer is None:
            return Choice("", Reason("failed", "the model failed; fallback"), trace=trace)
        clarifies = answer.exit == CLARIFY
        return Choice(
            exit=answer.exit,
            reason=Reason("model", answer.reason),
            confidence=dict(answer.scores),
            reply="" if clarifies else answer.reply,
            note=answer.note,
            slots=dict(answer.slots),
            slot_problems=answer.slot_problems,
            candidates=_named(question, answer.scores) if clarifies else (),
            question=answer.reply if clarifies else "",
            trace=trace,
        )


def _named(question: Question, scores: dict[str, float]) -> tuple[str, ...]:
    """The options a model's clarifying question is about: its two likeliest when it
    scored them, else every option of the state (its answer is judged against them)."""
    ids = [o.id for o in question.options]
    scored = sorted((i for i in ids if i in scores), key=lambda i: -scores[i])
    return tuple(scored[:2]) if scored else tuple(ids)


def choosing(
    chooser: ExitChooser,
    asked: Question | Posed,
    prompts: Prompts | None = None,
    converse: Converse | None = None,
) -> Steps[Choice]:
    """The chooser's choice as steps: a model's calls yielded, any other chooser (it reads
    the messages itself, in this process) asked at once, no prompt rendered."""
    if not isinstance(chooser, ModelChooser):
        return done(chooser.choose(asked.question if isinstance(asked, Posed) else asked))
    if not isinstance(asked, Posed) or prompts is None:
        raise ValueError(UNPOSED)
    return chooser.steps(asked, prompts, converse)


def decide(
    chooser: ExitChooser,
    asked: Question | Posed,
    prompts: Prompts | None = None,
    *,
    converse: Converse | None = None,
) -> Steps[Decided]:
    """Ask `chooser`, check its choice, re-ask once for a refused slot value (a chooser
    that reads messages itself), and record the decision. A model chooser needs the
    question posed, and `prompts` to render it (`converse` talks with the tools); any
    other chooser reads the question alone."""
    question = asked.question if isinstance(asked, Posed) else asked
    choice = yield from choosing(chooser, asked, prompts, converse)
    failures = [Emit(kind, data) for kind, data in choice.trace.events]  # type: ignore[arg-type]
    calls = choice.trace.calls
    if not isinstance(chooser, ModelChooser) and not choice.failed:
        calls = 1
        choice, problem = _checked(choice, question)
        if problem:
            failures.append(_failure(question, problem, offline=True))
            again = chooser.choose(replace(question, rejected=problem))
            choice, calls = (_checked(again, question)[0] if not again.failed else again), 2
    if choice.failed:
        return Decided(None, _decision(chooser, question, None, calls), tuple(failures))
    choice = _confirmed(_waiting(choice, question), question)
    return Decided(choice, _decision(chooser, question, choice, calls), tuple(failures))


def _checked(choice: Choice, question: Question) -> tuple[Choice, str]:
    """The choice with only the slot values their slots accept, and what was refused; an
    exit not offered makes it a failed choice."""
    allowed = question.answers
    if choice.exit not in allowed:
        offered = ", ".join(allowed)
        return Choice("", Reason("invalid", f"`{choice.exit}` is not one of {offered}")), ""
    if not question.slots or not choice.slots:
        return choice, ""
    values, problems = check_slots(choice.slots, question.slots)
    return replace(choice, slots=values, slot_problems=problems), "; ".join(problems)


def _waiting(choice: Choice, question: Question) -> Choice:
    """An exit that waits for the state's slots is not taken yet: the state stays and asks
    for them (a model was already re-asked, naming them, in `exchange.ask`)."""
    waiting = question.waits_for(choice.exit, choice.slots)
    if not waiting:
        return choice
    names = ", ".join(f"`{n}`" for n in waiting)
    why = Reason("waits", f"`{choice.exit}` waits until {names} is given: asked for it first")
    return replace(choice, exit=STAY, reason=why, reply="")


def _confirmed(choice: Choice, question: Question) -> Choice:
    """An exit marked `confirm: true` is asked about before it is taken, whoever chose it
    (the answer to that question, judged against it, takes it)."""
    if not question.asks:
        return choice
    option = next((o for o in question.options if o.id == choice.exit), None)
    if option is None or not option.confirm:
        return choice
    why = Reason("confirm", f"`{option.id}` is taken only once the user confirms it")
    return replace(choice, exit=CLARIFY, reason=why, candidates=(option.id,), question="")


def _failure(question: Question, error: str, **extra: Any) -> Emit:
    data = {"state": question.state, "kind": question.kind, "error": error, **extra}
    return Emit("llm_error", data)


def _decision(
    chooser: ExitChooser, question: Question, choice: Choice | None, calls: int
) -> Decision:
    trace = choice.trace if choice is not None else Trace()
    reason = choice.reason if choice is not None else Reason("failed", "no usable answer")
    facts = {"kind": reason.kind, **dict(reason.facts)} if reason.facts else {}
    return trusted(  # every field is built right here: skip validation
        Decision,
        state=question.state,
        kind=question.kind,
        chosen=choice.exit if choice is not None else "",
        reason=str(reason) if choice is not None else "the model failed; fallback",
        candidates=question.exit_ids,
        scores=dict(choice.confidence) if choice is not None else {},
        prompt_hash=trace.prompt_hash,
        model=str(chooser.name),
        attempts=max(calls, 1),
        fallback=choice is None,
        window=trace.window,
        summary=trace.summary,
        why=facts,
    )


def stays(choice: Choice) -> bool:
    return choice.exit == STAY
