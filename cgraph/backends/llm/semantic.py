"""The offline semantic mode: exits chosen by embedding similarity, replies authored.

No language model is involved. For an action state the newest user message is compared
(cosine similarity of all-MiniLM-L6-v2 embeddings) with each exit's `examples:` and its
`description`; the state *stays* when a "stay" prototype (a conversational move such as
actions, or one of a few conversational moves such as "What do you mean?") is clearly
closer than the best exit. The rule and its constants (`calibration`) were calibrated on
`tests/fixtures/semantic_labels.yaml` (see `bench/bench_semantic.py`):

    exit score  = 0.7 · max over examples (sim − 0.1 · polarity clash) + 0.3 · sim(description)
                  + denial (below) + 0.3 when the message opens with the answer the exit
                  means, at a state with a yes-exit and a no-exit ("no, I'm out" for "does
                  not want anyone to come in now": `yesno`) + 0.2 · the share of the
                  message's words the exit's texts use too (`overlap`; not for a
                  clarifying question)
    stay score  = max(sim to conversational moves, and for a question only, sim to the
                  state's objective, actions and guidelines: a statement on its topic answers it)
    best        = the exit with the highest score, minus 0.3 when the message is a question
                  that neither the exit expects nor is a request ("Can you…?", "…please?")
    stay  when  best < 0.15  or  best < stay score − 0.2  or  the message hedges
                ("maybe", "not sure", "one sec": `negation.is_hedge`)  or  best < 0.2
                and within 0.02 of the next exit (a guess: "clear" at "any chest pain?")
    an exit that ends the conversation is taken below 0.3 only on a message that closes
                ("cheers", "no, that's it"; `endings`); else the other exits are weighed
    (`choice`: the rule, with a reason that states the score it was made on and the bar)

A global exit is taken when it scores at least 0.5, above staying, and 0.08 above the
state's best own exit, on the message or on one of its clauses (`global_exits`); a message
that cries for help ("Help, there's smoke …", "emergency", "ambulance") needs 0.4 and no lead.

An opening message (`LLMRequest.opening`) is judged like any other; any other message that
entered the state this turn stays: it already answered the state before. A greeting before
what the user came to say is dropped ("Hi, my card was stolen" is judged as "my card was
stolen"), and a message that is only a greeting ("Hello Ava, good morning to you.") stays:
it answers nothing, however near a farewell exit its words fall.

An exit without `examples:` is matched on stand-ins (`stand_ins`): its description said
by the user, whole and per alternative ("The customer declines both options" → "I decline
both options"). An exit whose description means a shared dialogue act (done, no problem,
declined, kept as is: `acts`) is also matched on the act's canonical utterances.

The question penalty keeps a clarifying question ("What do you mean by doses?") from
counting as an answer; an exit expects questions when its description says the user
asks (not "asks to" or "asks for": a request), or one of its examples is a question that
is not a request ("Can I …?").

Similarity is measured on the message's point (`focus`): its first request ("I want to
sign up and also book a class"), what follows a contrast with a denial ("not X, but Y"),
and a clause that only denies ("nothing is broken, I wanted to ask about my lease") set
aside, since its topic words would pull towards the exit it denies. The denial term and
the polarity clash read the message from its contrast on.

A *polarity clash* is a yes-answer against a no-example (1.0) or a plain statement against
either (0.5): sentence embeddings barely see negation, so "No chest pain" sits close to
"I had chest pain" without it. The *denial* term reads what the message negates
(`negation.denied_phrases`: "No side effects" denies "side effects") against each exit's
description: an exit that affirms the denied phrase loses 0.5 · (sim − 0.2), plus its lead
over the other affirming exits; an exit whose description is itself negated ("No chest
pain was reported") gains 0.5 · (sim − 0.2), as read from the description's alternative
nearest the denied phrase ("is dirty or was not cleaned"). Tuned on the check-in set and
the dev sets (`bench/data/dev*_labels.yaml`), never on the held-out sets.

Decisions (and reflections, conditional starts) weigh first the session's findings
(annotation tags, exits taken), then the recent user messages: the exit backed by the
most distinctive single piece of evidence wins. Replies are the state's authored text;
reflections are templated notes; extraction keeps the user's own statements verbatim.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from cgraph.backends.embed import Embedder, Vector, cosine, shared_embedder
from cgraph.backends.llm.acts import ACTS, Act, as_user, negative_description
from cgraph.backends.llm.calibration import Calibration
from cgraph.backends.llm.choice import Choice as RuleChoice
from cgraph.backends.llm.choice import choose
from cgraph.backends.llm.denial import denial_scores
from cgraph.backends.llm.endings import guarded
from cgraph.backends.llm.evidence import decision_evidence
from cgraph.backends.llm.extractors import extract, refusals
from cgraph.backends.llm.focus import contrast_focus, derived_texts, focus
from cgraph.backends.llm.global_exits import (
    CLAUSE_GATE,
    GLOBAL_FLOOR,
    URGENT_FLOOR,
    beats,
    cries_for_help,
    near,
    urgent_parts,
)
from cgraph.backends.llm.memories import extract_memories
from cgraph.backends.llm.negation import is_hedge
from cgraph.backends.llm.overlap import overlaps
from cgraph.backends.llm.stand_ins import stand_ins
from cgraph.backends.llm.utterances import (
    counts_as_answer,
    is_greeting,
    is_question,
    is_request,
    polarity,
    without_greeting,
)
from cgraph.backends.llm.yesno import answer_scores
from cgraph.runtime.ports import STAY, Choice, ExitOption, Question, Reason
from cgraph.spec.model import Tier

# Conversational moves that never answer a state's question: greetings, clarifications,
# hesitation. They give "stay" a prototype in every state, whatever its objective says.
CONVERSATIONAL = (
    "Hello.",
    "Hi, how are you?",
    "What do you mean?",
    "Can you explain that?",
    "I have a question.",
    "Wait a moment.",
    "I don't know.",
    "Why do you ask?",
    "Sorry, say that again?",
    "Tell me more first.",
    "Thanks for asking.",
)


class SemanticModel:
    """An `ExitChooser` that needs no LLM: see the module docstring for the rule. It calls
    no tools (action states' `tools` are not offered; side-effect states run theirs) and
    writes no prose (history summaries are extracted from the user's statements)."""

    name = "semantic"

    def __init__(
        self,
        rest: str = "",
        embedder: Embedder | None = None,
        calibration: Calibration | None = None,
        embedding_model: str = "",
        **options: Any,
    ) -> None:
        # Provider options (api_base, temperature, ...) mean nothing here and are ignored.
        self._embedder = embedder
        self._embedding_model = embedding_model
        self.calibration = calibration or Calibration()
        self._acts: list[tuple[Act, Vector]] | None = None

    @property
    def embedder(self) -> Embedder:
        """The embedder given, else the process-wide one of the graph's `embedding_model`
        (the packaged MiniLM by default), loaded on first use."""
        if self._embedder is None:
            self._embedder = shared_embedder(self._embedding_model)
        return self._embedder

    def choose(self, question: Question) -> Choice:
        if question.kind == "action":
            answer = self._action(question)
        elif question.kind == "reflection":
            answer = self._reflection(question)
        else:  # decision, start, graph
            answer = self._decision(question)
        # Values are checked by the runtime against their slots, as a model's are.
        slots = {k: v for k, v in answer.get("slots", {}).items() if v is not None}
        return Choice(
            exit=str(answer["exit"]),
            reason=Reason("semantic", str(answer.get("reason", ""))),
            confidence=dict(answer.get("scores", {})),
            reply=str(answer.get("reply", "")),
            note=str(answer.get("note", "")),
            slots=slots,
        )

    def remember(self, user_messages: Sequence[str]) -> list[tuple[Tier, str]]:
        return [(m["tier"], m["text"]) for m in extract_memories(user_messages)]  # type: ignore[misc]

    # -- action states -------------------------------------------------------------------

    def _action(self, request: Question) -> dict[str, Any]:
        answer = self._action_exit(request)
        just_entered = request.entered_this_turn and not request.opening
        if request.slots and request.user_messages and not just_entered:
            found = extract(
                request.slots, request.collect, request.user_messages[-1], closest=self.closest
            )
            answer["slots"] = {name: found.get(name) for name in request.slots}
            if request.rejected:
                answer = _refused(answer, request, refusals(request.slots, found))
        return answer

    def closest(self, message: str, values: Sequence[str]) -> tuple[str, float]:
        """The value most similar to the message (offline enum slots)."""
        vectors = self.embedder.embed([message, *values])
        scores = [cosine(vectors[0], v) for v in vectors[1:]]
        best = max(range(len(values)), key=scores.__getitem__)
        return values[best], scores[best]

    def _action_exit(self, request: Question) -> dict[str, Any]:
        """Global exits first, on the message and its clauses (`global_exits`); else own."""
        anywhere = [o for o in request.options if o.anywhere]
        local = [o for o in request.options if not o.anywhere]
        said = request.user_messages[-1] if request.user_messages else ""
        if said:  # one model run for all the texts read from the message, not one each
            self.embedder.embed(derived_texts(without_greeting(said), clauses=False))
        own = self._exit_among(request, local)
        for part in urgent_parts(said) if anywhere and said else ():
            asked = replace(request, user_messages=(*request.user_messages[:-1], part))
            taken = self._exit_among(asked, anywhere)
            if part == said and not near(taken, CLAUSE_GATE):
                break  # far from every global exit: its clauses will not be near one either
            if part == said:
                self.embedder.embed(derived_texts(said, clauses=True))
            urgent = cries_for_help(said)
            if not near(taken, URGENT_FLOOR if urgent else GLOBAL_FLOOR):
                continue  # the state's own exits need not be weighed on this part
            mine = own if part == said else self._exit_among(asked, local)
            topic = self.topic_score(part, request.stay_prototypes)
            if beats(taken, mine["scores"], topic, urgent=urgent):
                # The state's own exits keep their scores: `/why` shows what the global beat.
                scores = {**mine["scores"], **taken["scores"]}
                return {**taken, "reason": f"global exit: {taken['reason']}", "scores": scores}
        return own

    def _exit_among(self, request: Question, options: Sequence[ExitOption]) -> dict[str, Any]:
        stay = {"exit": STAY, "reply": request.authored_reply}
        just_entered = request.entered_this_turn and not request.opening
        if just_entered or not request.user_messages or not options:
            why = "just entered this state" if just_entered else "nothing to match"
            return {**stay, "reason": why, "scores": {}}
        message = without_greeting(request.user_messages[-1])
        scores = self.exit_scores(message, options)
        stay_score = self.stay_score(message, request.stay_prototypes)
        answers = {o.id for o in options if counts_as_answer(message, o)}
        choice = choose(
            scores,
            stay_score,
            self.calibration,
            answers=answers,
            guarded=guarded(message, options),
            allow_stay=request.allow_stay,
        )
        if request.allow_stay and is_hedge(message):
            # An unsure answer is asked again, not taken as an answer.
            choice = RuleChoice(STAY, "the message hedges: asked again")
        if request.allow_stay and is_greeting(request.user_messages[-1]):
            # A greeting alone answers nothing; the state asks its question.
            choice = RuleChoice(STAY, "only a greeting: asked again")
        shown = {**_rounded(scores), STAY: round(stay_score, 3)}
        if choice.exit == STAY:
            return {**stay, "reason": choice.reason, "scores": shown}
        return {"exit": choice.exit, "reason": choice.reason, "reply": "", "scores": shown}

    def exit_scores(self, message: str, options: Sequence[ExitOption]) -> dict[str, float]:
        """Similarity of `message` to each exit: its description, blended with its closest
        example (less a penalty when the two disagree in yes/no polarity)."""
        cal = self.calibration
        examples = {o.id: o.examples or stand_ins(o.description) for o in options}
        for option_id, lent in self.act_examples(options).items():
            examples[option_id] = (*examples[option_id], *lent)
        said = focus(message)
        texts = [message, said, *(o.description for o in options)]
        texts += [e for o in options for e in examples[o.id]]
        vectors = dict(zip(texts, self.embedder.embed(texts), strict=True))
        asserted = contrast_focus(message)
        mine, sign = vectors[said], polarity(asserted)
        denial = denial_scores(self.embedder, asserted, options, cal.denial)
        answered = answer_scores(message, options, cal.bare_weight)
        shared = overlaps(message, {o.id: (o.description, *examples[o.id]) for o in options})
        scores: dict[str, float] = {}
        for option in options:
            described = cosine(mine, vectors[option.description])
            matched = max(
                cosine(mine, vectors[e]) - cal.polarity_penalty * abs(polarity(e) - sign) / 2
                for e in examples[option.id]
            )
            weight = cal.description_weight
            scores[option.id] = (1 - weight) * matched + weight * described + denial[option.id]
            if counts_as_answer(message, option):  # a question's words are its topic
                scores[option.id] += cal.overlap_weight * shared[option.id]
            scores[option.id] += answered[option.id]  # "no, …" takes the exit that says no
        return scores

    def act_examples(self, options: Sequence[ExitOption]) -> dict[str, tuple[str, ...]]:
        """Per exit, the utterances of the shared dialogue acts its description means."""
        if not self.calibration.acts:
            return {}
        if self._acts is None:  # the same few texts every turn: embedded once
            described = self.embedder.embed([a.description for a in ACTS])
            self._acts = list(zip(ACTS, described, strict=True))
        vectors = self.embedder.embed([as_user(o.description) for o in options])
        lent: dict[str, tuple[str, ...]] = {}
        for option, vector in zip(options, vectors, strict=True):
            for act, act_vector in self._acts:
                if act.negative and not negative_description(option.description):
                    continue
                if cosine(vector, act_vector) >= act.floor:
                    lent[option.id] = (*lent.get(option.id, ()), *act.utterances)
        return lent

    def topic_score(self, message: str, prototypes: Sequence[str]) -> float:
        """Similarity of `message` to the state's own texts: how much it answers the state."""
        vectors = self.embedder.embed([message, *prototypes])
        return max((cosine(vectors[0], v) for v in vectors[1:]), default=0.0)

    def stay_score(self, message: str, prototypes: Sequence[str]) -> float:
        """Similarity of `message` to staying: the state's own texts or a conversational move."""
        texts = [message, *prototypes, *CONVERSATIONAL]
        vectors = self.embedder.embed(texts)
        own = [cosine(vectors[0], v) for v in vectors[1 : 1 + len(prototypes)]]
        moves = [cosine(vectors[0], v) for v in vectors[1 + len(prototypes) :]]
        # A statement on the state's topic answers it; only a question about it (not a
        # request) asks again, so only then do the state's own texts count as staying.
        asks = is_question(message) and not is_request(message)
        return max([*own, *moves] if asks else moves)

    # -- silent states -------------------------------------------------------------------

    def _decision(self, request: Question) -> dict[str, Any]:
        if not request.options:
            return {"exit": "", "reason": "no exits", "scores": {}}
        if len(request.options) == 1:
            only = request.options[0].id
            return {"exit": only, "reason": "the only way out", "scores": {only: 1.0}}
        # The graph's own record of findings (tags, exits taken) outweighs raw messages:
        # "No chest pain" said last must not hide the chest pain flagged two turns ago.
        for label, evidence in decision_evidence(request):
            scores = self.evidence_scores(evidence, request.options)
            chosen = max(scores, key=lambda k: scores[k])
            if scores[chosen] >= self.calibration.decisive_lead:
                reason = f"{label} point to {chosen} (lead {scores[chosen]:.2f})"
                return {"exit": chosen, "reason": reason, "scores": _rounded(scores)}
        first = request.options[0].id
        return {"exit": first, "reason": "no decisive evidence; first exit", "scores": {}}

    def evidence_scores(
        self, evidence: Sequence[str], options: Sequence[ExitOption]
    ) -> dict[str, float]:
        """Per exit, its largest lead over the other exits on any one piece of evidence."""
        lead = {o.id: -1.0 for o in options}
        for item in evidence:
            scores = self.exit_scores(item, options)
            for option in options:
                others = max(v for k, v in scores.items() if k != option.id)
                lead[option.id] = max(lead[option.id], scores[option.id] - others)
        return lead

    def _reflection(self, request: Question) -> dict[str, Any]:
        said = request.user_messages[-1] if request.user_messages else ""
        note = f"Reviewed: {request.objective}".rstrip()
        if said:
            note += f' The user last said: "{said}"'
        decided = self._decision(request)
        return {"note": note, **decided}


def _refused(answer: dict[str, Any], request: Question, said: dict[str, str]) -> dict[str, Any]:
    """The re-ask after an invalid slot value: the value left unset and, when this state
    asks for it, the question asked again naming what was wrong (a global exit stands)."""
    slots = {name: None if name in said else value for name, value in answer["slots"].items()}
    answer = {**answer, "slots": slots}
    if not set(said) & set(request.collect) or _global(answer["exit"], request):
        return answer
    reply = " ".join([*said.values(), request.authored_reply]).strip()
    return {**answer, "exit": STAY, "reason": "an invalid value: asked again", "reply": reply}


def _global(exit_id: str, request: Question) -> bool:
    return any(o.anywhere for o in request.options if o.id == exit_id)


def _rounded(scores: dict[str, float]) -> dict[str, float]:
    return {k: round(v, 3) for k, v in scores.items()}
