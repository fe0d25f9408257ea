"""The runtime's ports: what it needs from outside, owned here and implemented by backends.

Choosing is apart from talking. An `ExitChooser` reads a `Question` (a state, its options,
the conversation) and returns a `Choice`; the offline chooser implements it directly, and
the runtime's own chooser (`cgraph.runtime.ask.choosing`) implements it by asking a
`ChatModel`: a prompt in (`LLMRequest`), the raw text of its answer out, which the
runtime validates itself, so a model can never make a transition the graph does not
declare. `MemoryStore` and `SessionStore` are the other two ports.

Answers are JSON objects:
- action:     {"exit": "<exit id>" | "stay", "reason": str, "reply": str}
- decision / start / graph: {"exit": "<exit id>", "reason": str}
- reflection: {"note": str, "exit": "<exit id>", "reason": str}
- extract:    {"memories": [{"tier": "personal"|"project"|"task", "text": str}]}
- summary:    {"summary": str} (a backend with `writes_summaries = False` is never asked)
A backend may add "scores": {exit id: float} to explain its choice (shown by `/why`).
"""

from __future__ import annotations

import asyncio
from collections.abc import (
    AsyncIterator,
    Iterable,
    Iterator,
    Mapping,
    Sequence,
)
from contextlib import AbstractAsyncContextManager, AbstractContextManager
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, cast, runtime_checkable

# CLARIFY lives with the records (a `Decision` that asked has it as its `chosen`); choosers
# know it from here.
from cgraph.runtime.state.records import CLARIFY as CLARIFY
from cgraph.runtime.state.records import Event, Turn
from cgraph.spec.model import Tier

RequestKind = Literal["action", "decision", "reflection", "start", "graph", "extract", "summary"]
STAY = "stay"


@dataclass(frozen=True, slots=True)
class ExitOption:
    """One exit as the model sees it: `id` is what it must answer."""

    id: str
    description: str
    target: str
    examples: tuple[str, ...] = ()
    label: str = ""
    """The designer's few words for it (`label:`), said in a clarifying question."""
    anywhere: bool = False
    """A global exit: it holds in every state (an emergency, "cancel"); listed first."""
    irreversible: bool = False
    """Taking it cannot be taken back by the next message: it ends the conversation, leads
    into a side effect, or leaves the flow (a chooser needs more confidence for it)."""
    confirm: bool = False
    """The designer wants the user asked before it is taken (`confirm: true`)."""
    early: bool = False
    """It may be taken before the state's `collect` slots are filled (a global exit, or
    `early: true`)."""
    resume: bool = False
    """Taking it interrupts: the conversation comes back here afterwards (`resume: true`)."""
    drop: bool = False
    """Taking it closes the latest open interruption without going back (`drop: true`)."""
    handoff: bool = False
    """Taking it hands the message on, unanswered, to the state it leads to (`handoff: true`)."""


@dataclass(frozen=True, slots=True)
class Question:
    """What a choice is about, as data: the state, its options, the conversation, and the
    state's own texts (rendered). An `ExitChooser` reads it; a language model reads the
    prompt the runtime's model chooser renders from it (`LLMRequest`). Every field
    compares and shows: nothing in it is behaviour."""

    kind: RequestKind
    state: str
    """The qualified id of the state asking (`sub.yaml#triage` inside a sub-graph)."""
    options: tuple[ExitOption, ...] = ()
    allow_stay: bool = False
    user_messages: tuple[str, ...] = ()
    """Recent user messages, newest last."""
    objective: str = ""
    stay_prototypes: tuple[str, ...] = ()
    """Texts that describe staying: the state's objective, actions and intra-state guidelines."""
    authored_reply: str = ""
    """The state's authored text (`say:` rendered, or its actions): the reply of a chooser
    that writes none."""
    entered_this_turn: bool = False
    """True when the newest user message already moved the conversation into this state
    (and was not handed to it unanswered by a `handoff: true` exit: then it is judged
    against this state's exits)."""
    opening: bool = False
    """The newest user message opens the conversation and no state has answered it yet: it
    is judged against this state's exits although the state was entered this turn."""
    graph: str = ""
    """The name of the graph the asking state belongs to."""
    turn: int = 0
    annotations: tuple[str, ...] = ()
    """The session's findings so far (annotation tags)."""
    has_memories: bool = False
    """For `start` questions: whether the user has memories."""
    memory_count: int = 0
    slots: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Slots the answer may fill, as nullable JSON Schemas."""
    collect: tuple[str, ...] = ()
    """The slots this state asks for (the others are filled only when the user volunteers them)."""
    appends: tuple[str, ...] = ()
    """The `collect` slots this state adds to (`append:`): a list is never complete, so
    giving items answers the state and only an exit the user chooses leaves it."""
    rejected: str = ""
    """On a re-ask: why the previous answer was refused."""
    clarifying: tuple[str, ...] = ()
    """The options the previous turn's clarifying question named: the user's answer is
    judged against them first."""
    may_clarify: bool = True
    """The designer lets this state ask instead of guessing (`clarify:`)."""
    missing: tuple[str, ...] = ()
    """The slots this state asks for that are still unset: until the answer fills them,
    only an `early` exit (a global one, cancel, "not now") may be taken."""
    tools: tuple[str, ...] = ()
    """The tools a language model may call before it answers, by name (the state's `tools:`;
    none once the turn's calls are spent): its request offers them
    (`LLMRequest.tools`)."""

    @property
    def exit_ids(self) -> tuple[str, ...]:
        """The options' ids, then `stay` when allowed."""
        return exit_ids(self.options, self.allow_stay)

    @property
    def asks(self) -> bool:
        """The answer may be `clarify`: an action state that may stay, whose designer lets
        it ask, and whose previous turn did not ask already (a user is asked once, not in
        a loop)."""
        return (
            self.kind == "action" and self.allow_stay and self.may_clarify and not self.clarifying
        )

    @property
    def answers(self) -> tuple[str, ...]:
        """Every answer `exit` may take: `exit_ids`, then `clarify` where the state asks."""
        return (*self.exit_ids, CLARIFY) if self.asks else self.exit_ids

    def waits_for(self, exit_id: str, given: Iterable[str]) -> tuple[str, ...]:
        """The slots `exit_id` still waits for when an answer gives `given` (none for an
        early exit, staying or asking)."""
        option = next((o for o in self.options if o.id == exit_id), None)
        if option is None or option.early or not self.missing:
            return ()
        filled = set(given)
        return tuple(n for n in self.missing if n not in filled)


@dataclass(frozen=True, slots=True)
class Reason:
    """Why a choice was made, as data; `str(reason)` renders it, once, for people.

    `kind` names the rule (`model`: a language model's own words in `text`; the offline
    chooser's kinds are its own), `scores` the figures it weighed, `facts` anything else
    a reader of `/why` needs (the bar a score faced, the runner-up)."""

    kind: str
    text: str = ""
    facts: tuple[tuple[str, Any], ...] = ()

    def fact(self, name: str, default: Any = None) -> Any:
        return next((value for key, value in self.facts if key == name), default)

    def __str__(self) -> str:
        return self.text or self.kind


@dataclass(frozen=True, slots=True)
class Trace:
    """How a choice was reached by asking a model, for the log and `/why`."""

    calls: int = 0
    events: tuple[tuple[str, dict[str, Any]], ...] = ()
    """What the log keeps of the asking: (kind, data) of each failed attempt (`llm_error`)
    and each thing the user should hear (`llm_notice`)."""
    prompt_hash: str = ""
    window: int = 0
    """Conversation messages the prompt held."""
    summary: bool = False
    """The prompt held a summary of earlier messages."""


@dataclass(frozen=True, slots=True)
class Choice:
    """What an `ExitChooser` decided: an option's id, `stay`, or `clarify` (ask which of
    `candidates` the user meant), with a confidence per option and why."""

    exit: str
    reason: Reason
    confidence: dict[str, float] = field(default_factory=dict)
    """Per option id (and `stay`): how likely the chooser holds each to be meant, 0–1."""
    reply: str = ""
    """The chooser's own words ("" for one that writes none: the state's authored text)."""
    preface: str = ""
    """Words said before the state's authored text, for a chooser that writes none (what
    was refused): that text is rendered once the message's other values are in."""
    note: str = ""
    """A reflection's internal note."""
    slots: dict[str, Any] = field(default_factory=dict)
    """Slot values read from the message (valid ones only; absent is "not said")."""
    slot_problems: tuple[str, ...] = ()
    """Why other values were refused (asked for once more, then left unset)."""
    candidates: tuple[str, ...] = ()
    """For `clarify`: the options the question names, likeliest first."""
    question: str = ""
    """For `clarify`: the question, when the chooser writes one."""
    trace: Trace = Trace()
    """How it was reached, when a model was asked."""

    @property
    def failed(self) -> bool:
        """No usable answer: the runtime falls back (`exit` is "")."""
        return not self.exit


@runtime_checkable
class ExitChooser(Protocol):
    """Chooses among a state's exits (or to stay, or to ask), without being asked to talk:
    the offline chooser reads the question itself; a language model is asked through
    `ChatModel` by the runtime's own chooser (`cgraph.runtime.ask.choosing`)."""

    name: str

    def choose(self, question: Question) -> Choice:
        """The choice for `question`; never raises for what the user said."""
        ...


@runtime_checkable
class Rememberer(Protocol):
    """Picks what to remember of a message without a language model (the offline mode);
    with one, the runtime asks it an `extract` question instead."""

    def remember(self, user_messages: Sequence[str]) -> list[tuple[Tier, str]]:
        """What of the newest user message is worth remembering, as (tier, text)."""
        ...


CHARS_PER_TOKEN = 4
MESSAGE_OVERHEAD = 4  # role and separators, in tokens


def estimate_tokens(text: str) -> int:
    """A cheap token estimate (~4 characters per token, as for English with GPT tokenizers);
    exact counts would need the provider's tokenizer and are not worth the cost here. A
    history budget is counted in these."""
    return len(text) // CHARS_PER_TOKEN + MESSAGE_OVERHEAD


@runtime_checkable
class Summariser(Protocol):
    """Writes a session's running summary without a language model: offline, or when the
    model fails to (with one that writes prose, the runtime asks it a `summary` question)."""

    name: str

    def summarise(self, previous: str, older: Sequence[Mapping[str, str]], budget: int) -> str:
        """The summary `previous` extended with the messages `older`, in `budget` tokens."""
        ...


@dataclass(frozen=True, slots=True)
class LLMRequest:
    """One question to a language model: the rendered prompt, and the `Question` it asks
    (what the runtime validates the answer against; a scripted test model reads it too)."""

    kind: RequestKind
    messages: tuple[dict[str, str], ...]
    """The rendered prompt, as chat messages (system first), static parts first."""
    schema: dict[str, Any]
    """JSON Schema of the answer; the exit field is an enum of the exit ids."""
    schema_name: str
    state: str
    """The qualified id of the state asking (`sub.yaml#triage` inside a sub-graph)."""
    tools: tuple[dict[str, Any], ...] = ()
    """Functions the model may call before it answers (`name`, `description`, `parameters`).
    A backend answers with `{"tool_calls": [{"id", "name", "arguments"}]}` to call them; in
    `messages`, an assistant message's `tool_calls` is that list as JSON text, and each
    result is a `tool` message with its `tool_call_id`."""
    question: Question | None = None
    """What is asked, as data (None for a summary: it chooses nothing)."""

    @property
    def asked(self) -> Question:
        return self.question if self.question is not None else Question(self.kind, self.state)

    @property
    def options(self) -> tuple[ExitOption, ...]:
        return self.asked.options

    @property
    def allow_stay(self) -> bool:
        return self.asked.allow_stay

    @property
    def slots(self) -> dict[str, dict[str, Any]]:
        return self.asked.slots

    @property
    def collect(self) -> tuple[str, ...]:
        return self.asked.collect

    @property
    def user_messages(self) -> tuple[str, ...]:
        return self.asked.user_messages

    @property
    def entered_this_turn(self) -> bool:
        return self.asked.entered_this_turn

    @property
    def rejected(self) -> str:
        return self.asked.rejected

    @property
    def has_memories(self) -> bool:
        return self.asked.has_memories

    @property
    def exit_ids(self) -> tuple[str, ...]:
        """The options' ids, then `stay` when allowed."""
        return self.asked.exit_ids

    @property
    def answers(self) -> tuple[str, ...]:
        """Every answer `exit` may take (`Question.answers`)."""
        return self.asked.answers


def exit_ids(options: Sequence[ExitOption], allow_stay: bool) -> tuple[str, ...]:
    """The ids a model may answer with; the schema's enum and the validator share it."""
    return tuple(o.id for o in options) + ((STAY,) if allow_stay else ())


@dataclass(frozen=True, slots=True)
class Whole:
    """The last item of a stream: the answer as `complete` would have returned it, when it
    is not just the pieces joined (a round of tool calls, assembled from their deltas)."""

    text: str


@dataclass(frozen=True, slots=True)
class Capabilities:
    """What a model can do, declared by the model (the runtime never probes for it)."""

    streams: bool = False
    """`stream(request)` gives an answer's text as it is written."""
    calls_tools: bool = True
    """It calls the tools a request offers (`LLMRequest.tools`)."""
    writes_prose: bool = True
    """It writes summaries (`summary` requests); without, the runtime extracts them."""
    awaits: bool = False
    """It has `async acomplete(request)` (`cgraph.runtime.needs.AsyncModel`): the async
    driver awaits it instead of waiting on it in a thread."""
    offline: bool = False
    """Its answers were read from the user's messages, not written by a language model (a
    recording of the offline chooser, replayed): a value a slot refuses is the user's."""


@runtime_checkable
class ChatModel(Protocol):
    """A language model: a prompt in, the text of its answer (or tool calls) out.

    `begin_turn()` is called when a turn or its memory extraction starts (where a turn's
    deadline begins); `notices()` drains what the user should hear once (a structured-
    output mode the server refused); `stream(request)`, for a model whose capabilities
    say it streams, gives the answer's text in pieces as it is written (the content, or
    the answer function's arguments; never an offered tool's), optionally ended by a
    `Whole` that stands for the complete answer.
    """

    name: str

    @property
    def capabilities(self) -> Capabilities: ...

    def complete(self, request: LLMRequest) -> str:
        """Answer `request` with raw text (JSON expected). Raise `LLMError` on failure."""
        ...

    def stream(self, request: LLMRequest) -> Iterator[str | Whole]: ...

    def begin_turn(self) -> None: ...

    def notices(self) -> tuple[str, ...]: ...


class AsyncModel(Protocol):
    """What a model whose capabilities say it `awaits` has besides `ChatModel`'s methods:
    the same answers, awaited, so that a turn waiting on the model holds no thread
    (`cgraph.runtime.needs.drive_async`)."""

    async def acomplete(self, request: LLMRequest) -> str: ...

    def astream(self, request: LLMRequest) -> AsyncIterator[str | Whole]: ...


class Quiet:
    """What most chat models do about turns and notices: nothing (a base to inherit)."""

    def begin_turn(self) -> None:
        return None

    def notices(self) -> tuple[str, ...]:
        return ()

    def stream(self, request: LLMRequest) -> Iterator[str | Whole]:
        raise NotImplementedError(f"{type(self).__name__} does not stream")


@dataclass(frozen=True, slots=True)
class NewMemory:
    """Something worth remembering, before it is stored."""

    text: str
    tier: Tier
    session_id: str = ""
    state: str = ""
    turn: int = 0
    id: str = ""
    """The id to store it under when it is new ("": a fresh one); set for a memory that
    waited in the outbox (`cgraph.backends.memory.pending`) under the id it was given."""
    created_at: float = 0.0
    """When it was said (0: when it is stored)."""


@dataclass(frozen=True, slots=True)
class Memory:
    """A stored memory; `score` is the similarity when it was recalled."""

    id: str
    text: str
    tier: Tier
    user_id: str
    session_id: str
    state: str
    turn: int
    created_at: float
    score: float | None = None


@runtime_checkable
class MemoryStore(Protocol):
    """Per-user memories, searched by meaning. One user's memories never reach another."""

    def recall(
        self,
        user_id: str,
        queries: Sequence[str],
        *,
        tiers: Sequence[Tier] = (),
        top_k: int = 5,
        min_score: float | None = None,
        session_id: str | None = None,
    ) -> list[Memory]:
        """Memories of `user_id` most similar to any query, best first; empty tiers = all.
        With `session_id`, what that session may recall (`visible`): the task tier holds
        only its own memories."""
        ...

    def add(self, user_id: str, items: Sequence[NewMemory]) -> list[Memory]:
        """Store new memories, skipping near-duplicates; returns what was stored."""
        ...

    def list(
        self, user_id: str, *, tiers: Sequence[Tier] = (), session_id: str | None = None
    ) -> list[Memory]:
        """A user's memories (only `tiers`, when given; with `session_id`, only those that
        session may see), oldest first."""
        ...

    def delete(self, user_id: str, ids: Sequence[str] | None = None) -> int:
        """Delete some (or, with `ids=None`, all) of a user's memories; returns how many."""
        ...

    def count(self, user_id: str) -> int:
        """How many memories `user_id` has."""
        ...


class NullMemory:
    """Remembers nothing: the store used when memory is off."""

    def recall(
        self,
        user_id: str,
        queries: Sequence[str],
        *,
        tiers: Sequence[Tier] = (),
        top_k: int = 5,
        min_score: float | None = None,
        session_id: str | None = None,
    ) -> list[Memory]:
        return []

    def add(self, user_id: str, items: Sequence[NewMemory]) -> list[Memory]:
        return []

    def list(
        self, user_id: str, *, tiers: Sequence[Tier] = (), session_id: str | None = None
    ) -> list[Memory]:
        return []

    def delete(self, user_id: str, ids: Sequence[str] | None = None) -> int:
        return 0

    def count(self, user_id: str) -> int:
        return 0


@dataclass(frozen=True, slots=True)
class Delivery:
    """One event for one destination (a webhook), and how its sending went: a row of the
    store's outbox, written in the transaction of the step it tells of."""

    id: str
    """The event id and the destination's: unique per delivery."""
    event_id: str
    """What a receiver deduplicates by (the same on every attempt)."""
    destination: str
    type: str
    owner: str
    """The user whose session the event is of."""
    body: str
    status: str = "pending"
    """`pending`, `delivered` or `failed` (given up after the last attempt)."""
    attempts: int = 0
    next_at: float = 0.0
    last_error: str | None = None
    created_at: float = 0.0
    delivered_at: float | None = None


class Announcer(Protocol):
    """What a session tells the world (webhooks): the deliveries a new session and a
    committed turn make, which the store writes with the session's first record and with
    the turn's last step, in the same transaction. An event is kept exactly when what it
    tells of is: a process killed right after a turn loses none, and a turn that never
    committed sends none."""

    def started(self, graph: str, session: str, user: str) -> Sequence[Delivery]: ...

    def turned(self, graph: str, user: str, turn: Turn, since: int) -> Sequence[Delivery]:
        """The deliveries of `turn`, whose events begin at seq `since` (a turn taken back
        and made again is another turn: its events get other ids)."""
        ...


class Outbox(Protocol):
    """Where deliveries wait, beside a store's sessions (`SessionStore.outbox`): what a
    dispatcher claims (leased, so two dispatchers do not send one at once), settles after
    an attempt, and lists for `GET /v1/webhooks/deliveries`."""

    def claim(self, now: float, lease: float, limit: int) -> list[Delivery]: ...

    def settle(self, delivery: Delivery) -> None: ...

    def deliveries(self, owner: str, status: str | None, limit: int) -> list[Delivery]: ...

    def close(self) -> None: ...


@dataclass(frozen=True, slots=True)
class SessionInfo:
    """What a store knows about a session besides its log and snapshot."""

    id: str
    user_id: str
    graph: str
    """The graph file the session was started with (absolute path, or "" if built in code)."""
    graph_name: str
    model: str
    created_at: float
    updated_at: float = 0.0
    turn: int = 0
    state: str = ""
    completed: bool = False


@dataclass(slots=True)
class StoredSession:
    """What `SessionStore.load` returns: the session's summary, its last committed snapshot
    and the events of its latest turn (every event from the snapshot's `turn_seq` on)."""

    info: SessionInfo
    snapshot: dict[str, Any]
    events: list[Event] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Standing:
    """Where a stored session stands, read without its log (`SessionStore.standing`): what
    a front end that kept a session open checks before using it again."""

    created_at: float
    """Tells the session from a later one of the same id."""
    seq: int | None
    """The `seq` of the last committed step (its snapshot's `seq`)."""
    keyed: tuple[int, int] | None = None
    """`turn_of_key`'s answer for the key asked about, read with the rest."""


@dataclass(frozen=True, slots=True)
class Lease:
    """The right to write one session, for a while (`SessionStore.acquire`).

    One holder at a time, across processes and machines, without a connection or a lock
    held while it waits on a model: a lease is taken, renewed and let go in short
    statements, and lapses at `expires` when its holder stops renewing it (killed, cut
    off from the store). `fence` is above that of every earlier lease of the session, and
    the store refuses a write that does not carry the fence in force (`LeaseLost`): a
    holder that lapsed and carries on cannot write over the one that took over."""

    session_id: str
    holder: str
    """Who holds it: one value per store opened in a process (machine, process, opening)."""
    fence: int
    expires: float
    """When it lapses unless renewed, in seconds on the store's clock."""
    standing: Standing | None = field(default=None, compare=False)
    """Where the session stood when the lease was taken, read in the same statement
    (`acquire(key=…)`): what a front end checks next, without a second read. None when
    the session is not stored."""


@runtime_checkable
class SessionStore(Protocol):
    """The checkpoint store behind sessions: an append-only event log, the last snapshot,
    a checkpoint per turn, and the few lookups a running session needs without reading
    the whole log (a turn's cost and a resume must not grow with the session).

    Two derived lookups follow the log: a message event (`user_message`, `reply`) carries
    its place in the transcript as `data["msg"]`, and a user message sent with an
    idempotency key carries it as `data["key"]`. After an undo, a message's place is taken
    again by the next message, so the latest event at a place is the message in effect.
    """

    shared: bool
    """True when processes on other machines may open the same sessions (a database
    server), so what is kept beside them must be shared too (memories in a Chroma server)."""

    def create(
        self,
        info: SessionInfo,
        snapshot: dict[str, Any],
        events: Sequence[Event],
        *,
        fence: int | None = None,
        deliveries: Sequence[Delivery] = (),
    ) -> None:
        """Record a new session with its first snapshot and events (and `deliveries` in
        its outbox, in the same transaction; one already there, by its id, is kept).

        Every write (`create`, `commit`, `append`, `delete`) carries a `fence`, by default
        that of the lease this store holds for the session (`acquire`): it is refused with
        `LeaseLost` unless that is the lease in force. A write with no lease at all (the
        library used without `hold`) is refused while another's lease is in force."""
        ...

    def commit(
        self,
        session_id: str,
        events: Sequence[Event],
        snapshot: dict[str, Any],
        *,
        checkpoint: int | None = None,
        rewind_to: int | None = None,
        fence: int | None = None,
        deliveries: Sequence[Delivery] = (),
    ) -> None:
        """One step, atomically: append `events`, replace the snapshot, and (at the end of a
        turn) keep it as the checkpoint of turn `checkpoint` and add the turn's
        `deliveries` to the outbox. `rewind_to` (an undo back to the end of that turn):
        later turns' checkpoints and keys are dropped."""
        ...

    def append(self, session_id: str, events: Sequence[Event], *, fence: int | None = None) -> None:
        """Append events at once, the snapshot unchanged: an intent written ahead of an
        irreversible call (a tool), so a crash during the call leaves a record of it."""
        ...

    def load(self, session_id: str) -> StoredSession:
        """The session's info, last snapshot, and the events from the snapshot's `turn_seq`
        on (its latest turn; all of them for a snapshot without one); `SessionNotFound`
        if absent."""
        ...

    def events(self, session_id: str, *, after: int = -1, limit: int | None = None) -> list[Event]:
        """The append-only log, in order: the events whose `seq` is above `after`, at most
        `limit` of them (undone turns included: each undo is an event too)."""
        ...

    def message_events(self, session_id: str, start: int, end: int) -> list[Event]:
        """The events of the transcript's messages from place `start` up to (not
        including) `end`, as they stand after every undo."""
        ...

    def turn_of_key(self, session_id: str, key: str) -> tuple[int, int] | None:
        """(turn, seq of its user message) of the turn in effect sent with idempotency
        `key`, or None."""
        ...

    def standing(self, session_id: str, key: str | None = None) -> Standing:
        """Where the session stands, and (with `key`) the turn sent with that key, in one
        read that decodes the snapshot only: what a front end checks, at every request,
        before it uses a session it kept open. `SessionNotFound` if absent."""
        ...

    def checkpoint(self, session_id: str, turn: int) -> dict[str, Any] | None:
        """The snapshot as it was at the end of `turn` (0: when the session started)."""
        ...

    def sessions(self, user_id: str | None = None) -> list[SessionInfo]:
        """Stored sessions, most recently updated first."""
        ...

    def delete(self, session_id: str, *, fence: int | None = None) -> bool:
        """Remove a session: its events, checkpoints and snapshot (a user's right to be
        forgotten); False when there was none."""
        ...

    def acquire(self, session_id: str, *, ttl: float, key: str | None = None) -> Lease | None:
        """Take the session's lease for `ttl` seconds when no one holds it (or its holder's
        lapsed), in one short statement: the new lease, its fence above every earlier
        one, and the session's `standing` (with `key`'s turn) read with it; None while
        another's is in force. The session need not exist yet."""
        ...

    def renew(self, leases: Sequence[Lease], *, ttl: float) -> list[Lease]:
        """Extend leases of this store's to `ttl` seconds from now, in one statement: those
        still in force (their fence unchanged); the others are lost."""
        ...

    def release(self, lease: Lease) -> None:
        """Let the lease go (when it is still in force): the next holder need not wait."""
        ...

    def hold(
        self,
        session_id: str,
        *,
        wait: float = 0.0,
        ttl: float | None = None,
        key: str | None = None,
    ) -> AbstractContextManager[Lease]:
        """The session's one writer: while the context is open this store holds its lease
        (`acquire`, renewed in the background, let go at the end), so no other holder — in
        this process or any other that reaches the store — writes it. Waits up to `wait`
        seconds, first come first served within the process, then raises `SessionBusy`. A
        holder that dies stops renewing: its lease lapses after `ttl` seconds (a store on
        one machine also lets a dead process's lease go at once). A turn, an undo and a
        delete run inside it. The lease carries the session's `standing` as it was taken
        (and `key`'s turn, the key of the message it is taken for)."""
        ...

    def outbox(self) -> Outbox:
        """The outbox the store's commits write deliveries to, for a dispatcher to send
        from (on a connection of its own)."""
        ...

    def close(self) -> None:
        """Release the store's resources (a database connection); stored data is kept."""
        ...


class AwaitedStore(SessionStore, Protocol):
    """A store that also awaits a turn's statements on an event loop (the server's): its
    commits and its lease, with no thread between the loop and the database. The blocking
    calls stay, for every other caller."""

    awaits: bool
    """Whether it was given a loop to await on (`serve_on`): the async driver then awaits
    a turn's commits (`acommit`) instead of running `commit` in a worker."""

    def serve_on(self, loop: asyncio.AbstractEventLoop) -> None:
        """Await statements on `loop` from now on (called on it, as the server starts)."""
        ...

    async def acommit(
        self,
        session_id: str,
        events: Sequence[Event],
        snapshot: dict[str, Any],
        *,
        checkpoint: int | None = None,
        rewind_to: int | None = None,
        fence: int | None = None,
        deliveries: Sequence[Delivery] = (),
    ) -> None:
        """`commit`, awaited (on another loop than the served one: in a thread)."""
        ...

    def ahold(
        self,
        session_id: str,
        *,
        wait: float = 0.0,
        ttl: float | None = None,
        key: str | None = None,
    ) -> AbstractAsyncContextManager[Lease]:
        """`hold`, its statements awaited."""
        ...

    async def aclose(self) -> None:
        """Let go of the served loop's connections (on that loop, as it stops)."""
        ...


def awaited(store: SessionStore) -> AwaitedStore | None:
    """`store` when it awaits a turn's statements on a loop it was given, else None."""
    return cast(AwaitedStore, store) if getattr(store, "awaits", False) else None
