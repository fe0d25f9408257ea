"""The context-graph format as immutable dataclasses; the JSON Schema is generated from them.

Every field's docstring is what a designer sees in their editor when hovering a key.
Constraints are JSON-Schema keywords in `Annotated` metadata, so the published schema
says exactly what `cgraph.spec.conform` enforces. Plain dataclasses, not pydantic, and
their `==`, hash and repr defined once (`_compared`) rather than generated per class:
defining these classes is then cheap, which keeps `cgraph lint` starting fast.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from operator import attrgetter
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar

from cgraph.spec.limits import MAX_GRAPH_NAME_CHARS, ReadLimits
from cgraph.spec.trust import Trust

T = TypeVar("T")


class Keywords(tuple[tuple[str, Any], ...]):
    """JSON-Schema keywords attached to a type with `Annotated` (a dict would not hash)."""

    def __new__(cls, **keywords: Any) -> Keywords:
        return super().__new__(cls, sorted(keywords.items()))


ID_PATTERN = r"^[A-Za-z_][A-Za-z0-9_.\-]*$"
Tier = Literal["personal", "project", "task"]
TIERS: tuple[Tier, ...] = ("personal", "project", "task")
Identifier = Annotated[str, Keywords(pattern=ID_PATTERN)]
GraphName = Annotated[str, Keywords(pattern=ID_PATTERN, maxLength=MAX_GRAPH_NAME_CHARS)]
Text = Annotated[str, Keywords(minLength=1)]
HANDLER_PATTERN = r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$"
Handler = Annotated[str, Keywords(pattern=HANDLER_PATTERN)]
# A state of this graph, or `file.yaml#state`: a state of another graph file (relative to
# this one), entered there.
TARGET_PATTERN = r"^(?:[^#\s]+#)?[A-Za-z_][A-Za-z0-9_.\-]*$"
Target = Annotated[str, Keywords(pattern=TARGET_PATTERN)]
CROSS = "#"
SlotType = Literal["string", "integer", "number", "boolean", "array", "object"]
LimitName = Literal["max_transitions_per_turn", "max_reflections", "max_visits"]

# One letter per state type, as the abstract topology writes them.
TYPE_LETTERS = {
    "action": "A",
    "decision": "D",
    "reflection": "R",
    "recall": "M",
    "annotation": "N",
    "side_effect": "S",
    "graph": "G",
}
SILENT_TYPES = frozenset(TYPE_LETTERS) - {"action"}
Isolation = Literal["process", "thread"]
Structured = Literal["auto", "json_schema", "tool", "json_object"]
PromptKind = Literal["action", "decision", "reflection", "extract", "start"]
ContextStrategy = Literal["keep", "reset", "reset_with_summary"]
INTERNAL = {"internal": True}
"""Field metadata: set by cgraph, never written in a graph file (left out of the schema)."""
PROMPT_TEXT = "prompt_text"
PROMPT = {PROMPT_TEXT: True}
"""Field metadata: a list of texts the state shows the model in its part of the prompt."""
KEY = "key"
"""Field metadata: the YAML key of a field whose name is a Python keyword (`except`)."""


def _compared(cls: type[T]) -> type[T]:
    """Give a format dataclass the `==`, hash and repr `@dataclass` would generate: its
    compared fields, in order. Generating them per class compiles three functions each, a
    tenth of `cgraph lint`'s start-up for the format's classes; these are shared."""
    cls.__eq__ = _eq  # type: ignore[method-assign]
    cls.__hash__ = _hash  # type: ignore[method-assign]
    cls.__repr__ = _repr  # type: ignore[method-assign]
    return cls


_COMPARED: dict[type, attrgetter[Any]] = {}
_SHOWN: dict[type, tuple[str, ...]] = {}


def _values(obj: Any) -> Any:
    get = _COMPARED.get(obj.__class__)
    if get is None:  # the first name twice: a tuple of values even for a one-field class
        names = [f.name for f in fields(obj) if f.compare]
        get = _COMPARED[obj.__class__] = attrgetter(*names, names[0])
    return get(obj)


def _eq(self: Any, other: Any) -> Any:
    if other.__class__ is not self.__class__:
        return NotImplemented
    return _values(self) == _values(other)


def _hash(self: Any) -> int:
    return hash(_values(self))


def _repr(self: Any) -> str:
    names = _SHOWN.get(self.__class__)
    if names is None:
        names = _SHOWN[self.__class__] = tuple(f.name for f in fields(self) if f.repr)
    shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in names)
    return f"{self.__class__.__qualname__}({shown})"


def key_of(spec: Any) -> str:
    """The YAML key of a dataclass field: its name, unless its metadata names the key."""
    key: str = spec.metadata.get(KEY, spec.name)
    return key


@_compared
@dataclass(frozen=True, kw_only=True, eq=False, repr=False)
class ExitCondition:
    """A way out of a state: when `description` (or `when`) holds, go to `next_state`."""

    description: Text | None = None
    """The condition, written so a model (or a person) can tell whether it holds."""
    next_state: Target
    """The state to go to, `END` to finish, or `file.yaml#state` to enter another graph."""
    examples: tuple[Text, ...] = ()
    """User utterances that satisfy this condition: hints for LLMs, prototypes offline."""
    when: Text | None = None
    """A Jinja expression over variables and slots, e.g. `party_size > 12`. Without a
    `description` the exit is deterministic: the first whose `when` holds is taken, no model
    asked. With one, the model may choose it only while `when` holds."""
    early: bool | None = None
    """In a state that `collect`s slots: this exit may be taken before they are all filled
    (cancel, "not now", a hand-off). Without it, an exit of such a state waits for them."""
    resume: bool = False
    """Remember where the user was: the conversation comes back to this state when the
    path this exit starts reaches `RESUME`, or when the sub-graph it enters ends, and the
    state asks its question again. Interruptions nest."""
    confirm: bool = False
    """Ask the user before taking this exit, whatever the chooser's confidence ("Do you
    want to place the order?")."""
    drop: bool = False
    """Close the latest open interruption instead of going back to it ("no, forget the
    transfer"): the conversation goes on to `next_state`, and the state the interruption
    left is not taken up again (templates list the open ones as `interrupted`)."""
    handoff: bool = False
    """Hand the message that took this exit on to `next_state` (an action state)
    unanswered: that state reads it as said to it, instead of first saying its own line.
    A specialist hands a request it does not handle back to its hub, which routes it
    again ("is my flight on time?" at the seat desk goes back to triage, which sends it to
    the status desk), and a hub hands a request to the specialist that answers it. A
    message is handed to a state at most once a turn."""
    label: Text | None = None
    """A few words naming the exit to the user, said after "Do you want to …" when the
    agent asks which exit was meant or to confirm one (`send money`), instead of its
    whole description."""
    on_tool: Identifier | None = None
    """Taken because the model called this tool here on this turn and the call succeeded
    (pipecat's "the function picks the next node"), once the state's slots are filled:
    no side-effect state per function. It needs no `description` (the engine takes it,
    not the model); with `when:` both must hold, and the `when:` may read the call's
    `result:`."""

    @property
    def shown(self) -> str:
        """How the exit reads to a model and in the topology."""
        if self.description:
            return self.description
        said = [f"on {self.on_tool}"] if self.on_tool else []
        said += [f"when {self.when}"] if self.when else []
        return ", ".join(said)


@_compared
@dataclass(frozen=True, kw_only=True, eq=False, repr=False)
class GlobalExit(ExitCondition):
    """An exit offered in every action state (an emergency, "cancel", "talk to a human")."""

    except_: tuple[Identifier, ...] = field(default=(), metadata={KEY: "except"})
    """States where this exit does not apply."""


@_compared
@dataclass(frozen=True, kw_only=True, eq=False, repr=False)
class Slot:
    """A typed variable filled from what the user says (a JSON Schema subset)."""

    type: SlotType = "string"
    """The value's type: `string`, `integer`, `number`, `boolean`, `array` (a list of
    `items`) or `object` (a record of `properties`)."""
    items: Slot | None = None
    """An `array` slot's items: each one a slot of its own (`{type: string, enum: [...]}`,
    or an `object` with `properties`)."""
    properties: dict[Identifier, Slot] = field(default_factory=dict)
    """An `object` slot's fields, by name, each typed like a slot."""
    required: tuple[Identifier, ...] = ()
    """An `object` slot's properties that every value must give; the others may be null.
    Offline, a record missing one is asked about rather than stored."""
    enum: tuple[str | int | float, ...] = ()
    """The allowed values; offline, the closest one to what the user said is taken."""
    minimum: float | None = None
    """The smallest value a number slot accepts."""
    maximum: float | None = None
    """The largest value a number slot accepts."""
    pattern: str | None = None
    """A regular expression a text value must match (offline: the first match is taken)."""
    format: Literal["date", "time"] | None = None
    """A text slot holding a date (`2026-11-23`) or a time (`19:30`)."""
    description: str = ""
    """What the slot holds, shown to the model."""
    default: Any = None
    """The value before anything is collected (unset: null)."""
    confirm_correction: bool = False
    """A new value for this slot, once it holds one, is not taken silently: the agent asks
    ("Change the handle from @sam to @sammy?") and the user's yes or no settles it."""
    correction_question: str | None = None
    """The question asked for such a correction: a template reading `slot`, `old` and
    `new` (default: "Change <slot> from <old> to <new>?")."""
    correction_reply: str | None = None
    """What the agent says once the user agrees to such a correction, before the state
    goes on: a template reading `slot`, `old` and `new` ("Ok, updating the amount to
    {{ new }}."; default: nothing)."""


class StateFields:
    """What every state type answers, also for the keys only some types have: those types
    declare the key as their field, every other type reads the neutral value below
    (`NEUTRAL`), so no caller probes a state with `getattr`. Not a dataclass: nothing
    declared here is a key of the format, and the schema and the allowed keys stay each
    type's own."""

    exit_conditions: tuple[ExitCondition, ...] | None
    next_state: Target | None
    on_error: Identifier | None
    max_turns: int | None
    enter: Identifier | None
    actions: tuple[Text, ...]
    intra_state_navigation_guidelines: tuple[Text, ...]
    message_metadata: tuple[Text, ...]
    included_contexts: tuple[Tier, ...]
    collect: tuple[Identifier, ...]
    tiers: tuple[Tier, ...]


@_compared
@dataclass(frozen=True, kw_only=True, eq=False, repr=False)
class _State(StateFields):
    objective: Text
    """What this state is for: every state has one."""
    fallback: Text | None = None
    """What the agent says here when the model keeps failing (overrides the graph's)."""
    max_visits: Annotated[int, Keywords(minimum=1)] | None = None
    """How many times one session may enter this state; beyond it a guard stops the turn."""
    on_limit: Target | None = None
    """Where to go when this state's `max_visits` (or an action state's `max_turns`) is
    reached (else the turn stops)."""
    description: str | None = None
    """A note for designers; not shown to the model."""
    context: ContextStrategy = "keep"
    """The conversation history on entry: `keep` it, `reset` it (prompts from here on show
    only what follows), or `reset_with_summary` (a summary of what came before, then what
    follows)."""
    summary_prompt: Text | None = None
    """With `context: reset_with_summary`: what the model that writes the summary on entry
    should keep, instead of the default (the user's facts, decisions and open requests);
    e.g. "Keep the order so far: the dishes, their sizes and the address."."""
    say: str | None = None
    """A Jinja template. On an action state: the reply when no LLM writes one (offline). On a
    silent state: a line added to the turn's reply as the conversation passes through."""
    reset: tuple[Identifier, ...] = ()
    """Slots cleared (back to their default) each time this state is entered."""
    clarify: bool | Text | None = None
    """Whether a chooser unsure between exits may ask which one the user meant (default:
    the graph's `clarify`), or the question to ask: a template reading `candidates` (the
    exits' labels or descriptions, likeliest first)."""


@_compared
@dataclass(frozen=True, kw_only=True, eq=False, repr=False)
class _Routed(_State):
    exit_conditions: tuple[ExitCondition, ...] | None = None
    """The ways out, chosen by the model."""
    next_state: Target | None = None
    """The single way out of a silent state (instead of `exit_conditions`)."""


@_compared
@dataclass(frozen=True, kw_only=True, eq=False, repr=False)
class ActionState(_State):
    """User-facing: the agent talks with the user until an exit condition holds."""

    type: Literal["action"]
    """`action`: the state's type (user-facing: talks with the user)."""
    actions: tuple[Text, ...] = field(metadata=PROMPT)
    """Ordered client-facing interaction steps."""
    intra_state_navigation_guidelines: tuple[Text, ...] = field(metadata=PROMPT)
    """Rules for sequencing actions and for choosing an exit."""
    action_guidelines: tuple[Text, ...] = field(metadata=PROMPT)
    """Behavioural rules for the agent in this state."""
    boundary_constraints: tuple[Text, ...] = field(metadata=PROMPT)
    """What the agent must never do in this state."""
    exit_conditions: tuple[ExitCondition, ...]
    """The ways out; when none holds the agent stays and replies."""
    included_contexts: tuple[Tier, ...] = ()
    """Memory tiers recalled (by the user's message) into this state's prompt."""
    message_metadata: tuple[Text, ...] = ()
    """Tags attached to every message the agent sends in this state."""
    tools: tuple[Identifier, ...] = ()
    """Declared tools the model may call here before it answers (LLM mode; offline, tools
    run only from side-effect states)."""
    collect: tuple[Identifier, ...] = ()
    """Slots filled from the user's messages in this state (in the same model call that
    picks the exit); the state is passed through when they are all filled already."""
    append: tuple[Identifier, ...] = ()
    """`array` slots of `collect` this state adds to: the items a message gives are added to
    the list (an item it already holds is not added twice), so a list is built up over
    turns ("lisinopril" … "and vitamin D") instead of each message replacing it."""
    ask_before_filling: bool = False
    """Ask in this state even when its `collect` slots are already filled."""
    max_turns: Annotated[int, Keywords(minimum=1)] | None = None
    """How many turns in a row the conversation may spend in this state (the turn that
    enters it counts); a message that would keep it here longer meets a guard. Only an
    action state answers turns, so only it has the key."""


@_compared
@dataclass(frozen=True, kw_only=True, eq=False, repr=False)
class DecisionState(_State):
    """Silent: chooses among two or more exits, seeing the whole topology."""

    type: Literal["decision"]
    """`decision`: the state's type (silent: chooses an exit)."""
    exit_conditions: tuple[ExitCondition, ...]
    """The candidates; a decision needs at least two."""
    decision_guidelines: tuple[Text, ...] = field(default=(), metadata=PROMPT)
    """How to weigh the candidates."""


@_compared
@dataclass(frozen=True, kw_only=True, eq=False, repr=False)
class ReflectionState(_Routed):
    """Silent: re-assesses the conversation and writes an internal note."""

    type: Literal["reflection"]
    """`reflection`: the state's type (silent: writes an internal note)."""
    reflection_guidelines: tuple[Text, ...] = field(default=(), metadata=PROMPT)
    """What to re-examine before moving on."""


@_compared
@dataclass(frozen=True, kw_only=True, eq=False, repr=False)
class RecallState(_Routed):
    """Silent: pulls memories into the session's context."""

    type: Literal["recall"]
    """`recall`: the state's type (silent: recalls memories)."""
    queries: tuple[Text, ...] = ("{{ message }}",)
    """Jinja templates; each renders to one memory query."""
    tiers: tuple[Tier, ...] = ()
    """Memory tiers to search; empty means all."""
    top_k: Annotated[int, Keywords(minimum=1, maximum=100)] = 5
    """Memories kept per query."""


@_compared
@dataclass(frozen=True, kw_only=True, eq=False, repr=False)
class AnnotationState(_Routed):
    """Silent: tags the transcript and sets variables."""

    type: Literal["annotation"]
    """`annotation`: the state's type (silent: tags the transcript, sets variables)."""
    annotations: tuple[Text, ...] = ()
    """Tags added to the transcript at this point."""
    set: dict[Identifier, Any] = field(default_factory=dict)
    """Variables to set: name → value; text values are Jinja templates (`flag: true` and
    `count: 3` are the boolean and the number)."""


@_compared
@dataclass(frozen=True, kw_only=True, eq=False, repr=False)
class SideEffectState(_Routed):
    """Silent: calls a declared tool and stores its result."""

    type: Literal["side_effect"]
    """`side_effect`: the state's type (silent: calls a tool)."""
    tool: Identifier
    """The name of a tool declared under `tools`."""
    arguments: dict[Identifier, Any] = field(default_factory=dict)
    """Arguments for the tool; text values are Jinja templates."""
    result: Identifier | None = None
    """The variable that receives the tool's result."""
    on_error: Identifier | None = None
    """Where to go when the tool fails or times out (else the turn stops with the fallback)."""


@_compared
@dataclass(frozen=True, kw_only=True, eq=False, repr=False)
class GraphState(_Routed):
    """Hands the conversation to another graph; continues here when that graph ends."""

    type: Literal["graph"]
    """`graph`: the state's type (hands over to a sub-graph)."""
    graph: Text
    """Path of the sub-graph file, relative to this file."""
    enter: Identifier | None = None
    """The sub-graph's state to begin in (instead of its `start`)."""
    with_: dict[Identifier, str] = field(default_factory=dict, metadata={KEY: "with"})
    """Values passed in to the sub-graph's slots: slot → template (read in this graph)."""


State = Annotated[
    ActionState
    | DecisionState
    | ReflectionState
    | RecallState
    | AnnotationState
    | SideEffectState
    | GraphState,
    Keywords(discriminator="type"),
]


@_compared
@dataclass(frozen=True, kw_only=True, eq=False, repr=False)
class Agent:
    """The agent core: identity and global directives, first in every prompt."""

    name: Text = "Assistant"
    """The agent's name, as it introduces itself."""
    persona: str = ""
    """Who the agent is and how it speaks, in a sentence or two."""
    directives: tuple[Text, ...] = ()
    """Rules that hold in every state."""


@_compared
@dataclass(frozen=True, kw_only=True, eq=False, repr=False)
class StartEntry:
    """A conditional entry point, chosen on the first turn like a decision."""

    when: Text
    """The condition, e.g. `new user` or `returning user`."""
    state: Identifier
    """The state the conversation starts in when `when` holds."""


@_compared
@dataclass(frozen=True, kw_only=True, eq=False, repr=False)
class History:
    """The conversation history shown in prompts."""

    tokens: Annotated[int, Keywords(minimum=100)] = 2000
    """Token budget of the window of recent turns."""
    strategy: Literal["window", "summarize"] = "window"
    """`window` drops the oldest turns; `summarize` folds them into a running summary
    shown ahead of the window (written by the model; offline, the user's own statements)."""


@_compared
@dataclass(frozen=True, kw_only=True, eq=False, repr=False)
class Limits:
    """Loop guards; hitting one stops the turn in the last user-facing state."""

    max_transitions_per_turn: Annotated[int, Keywords(minimum=1)] = 12
    """Moves one turn may make; the next one stops the turn (a loop guard)."""
    max_reflections: Annotated[int, Keywords(minimum=0)] = 3
    """Reflections allowed per turn (bounded reflection)."""
    max_visits: dict[Identifier, int] = field(default_factory=dict)
    """Per-state visit caps for a whole session (a state's own `max_visits` also works)."""
    history_tokens: Annotated[int, Keywords(minimum=100)] = 2000
    """Token budget of the conversation history in prompts; oldest turns are dropped (the
    short form of `history: {tokens: N}`)."""
    history: History | None = None
    """The history window and what happens to the turns that leave it."""
    max_tool_calls: Annotated[int, Keywords(minimum=0)] = 4
    """Tool calls the model may make in one turn; past it the model must answer."""
    on_limit: dict[LimitName, Target] = field(default_factory=dict)
    """Where to go when a guard is hit, by limit (e.g. `max_reflections: failed`); a limit
    not listed stops the turn in the last user-facing state."""

    def history_budget(self) -> int:
        """The history window's token budget: `history.tokens`, else `history_tokens`."""
        return self.history.tokens if self.history is not None else self.history_tokens

    def summarizes(self) -> bool:
        return self.history is not None and self.history.strategy == "summarize"


@_compared
@dataclass(frozen=True, kw_only=True, eq=False, repr=False)
class MemoryConfig:
    """The recall layer."""

    store: Literal["every_turn", "session_end", "off"] = "every_turn"
    """When memories are extracted from the conversation."""
    top_k: Annotated[int, Keywords(minimum=1, maximum=100)] = 5
    """Memories recalled per query for `included_contexts`."""
    ttl_days: dict[Tier, float] = field(default_factory=dict)
    """Per-tier time-to-live in days."""
    max_items: dict[Tier, int] = field(default_factory=dict)
    """Per-tier cap on memories per user; the oldest are removed first."""
    host: str | None = None
    """A Chroma server's host; unset means an embedded store next to the sessions."""
    port: int = 8000
    """The Chroma server's port (with `host`)."""
    min_score: Annotated[float, Keywords(minimum=-1, maximum=1)] = 0.15
    """Memories less similar than this are not recalled."""


@_compared
@dataclass(frozen=True, kw_only=True, eq=False, repr=False)
class Tool:
    """A Python function a side-effect state calls, or the model calls from an action state."""

    name: Identifier
    """The tool's name, as states and the model call it."""
    description: str = ""
    """What the tool does, shown to the model when a state offers it."""
    parameters: dict[str, Any] = field(default_factory=lambda: {"type": "object"})
    """A JSON Schema for the arguments."""
    handler: Handler
    """`module:function`, importable from the graph's folder or the Python path."""
    timeout: Annotated[float, Keywords(exclusiveMinimum=0)] = 10.0
    """Seconds before the call counts as failed."""
    result: Identifier | None = None
    """Where a call by the model (from an action state that offers the tool) stores the
    result: a variable, or a slot, checked against the slot like a side-effect state's
    `result:`. The state's `when:` exits read it on the turn of the call."""
    sets: tuple[Identifier, ...] = ()
    """Variables or slots the tool sets, whoever calls it (a side-effect state or the
    model): a result that is a mapping sets each of these keys it holds, a slot's value
    checked against the slot; its other keys are only part of the result."""
    isolation: Isolation = "process"
    """Where the handler runs: `process`, a worker process that a timeout or a crash
    kills and replaces; `thread`, a thread of the session's own process (no start-up
    cost, but a timed-out call keeps running and a crash ends the session)."""


@_compared
@dataclass(frozen=True, kw_only=True, eq=False, repr=False)
class ModelConfig:
    """Defaults for the LLM; the command line overrides them."""

    name: str | None = None
    """A litellm model name, e.g. `gpt-4o-mini` or `anthropic/claude-3-5-haiku-latest`."""
    temperature: Annotated[float, Keywords(minimum=0, maximum=2)] = 0.2
    """Sampling temperature of every request."""
    max_tokens: Annotated[int, Keywords(minimum=16)] = 600
    """Cap on the tokens of each answer."""
    timeout: Annotated[float, Keywords(exclusiveMinimum=0)] = 60.0
    """Seconds a turn may wait for the model, across all its calls and retries."""
    retries: Annotated[int, Keywords(minimum=0, maximum=10)] = 3
    """Retries of a transient failure (a timeout, a rate limit, a 5xx, a lost connection)."""
    api_base: str | None = None
    """Base URL of an OpenAI-compatible server (a local llama.cpp, vLLM or LM Studio)."""
    structured: Structured = "auto"
    """How the answer's schema is sent: `auto` negotiates with the server."""
    one_system: bool = False
    """Send one leading system message, for chat templates that allow no other."""


@_compared
@dataclass(frozen=True, kw_only=True, eq=False, repr=False)
class DialogueAct:
    """A dialogue act of this graph's conversations (a crisis, a hand-off, being done): an
    exit whose description means it is also matched, offline, on its examples."""

    description: Text
    """The act as a designer would describe an exit for it ("The user asks for a human")."""
    examples: tuple[Text, ...] = ()
    """How users say it (an act without any lends nothing: `cgraph lint` warns)."""
    negative: bool = False
    """Lend the examples only to an exit whose description denies or refuses something
    ("says there is no danger"): embeddings cannot tell it from its affirmative."""
    floor: Annotated[float, Keywords(minimum=0, maximum=1)] | None = None
    """How near (cosine) an exit's description must be to the act's to be lent its
    examples; unset: the offline chooser's calibrated default."""


@_compared
@dataclass(frozen=True, kw_only=True, eq=False, repr=False)
class Graph:
    """A context graph."""

    cgraph: Literal[1]
    """Format version."""
    name: GraphName
    """The graph's id (at most 200 characters: what a client names to start a session)."""
    description: str = ""
    """A note for people reading the graph."""
    agent: Agent = field(default_factory=Agent)
    """The agent core: its name, persona and directives, first in every prompt."""
    start: Identifier | tuple[StartEntry, ...]
    """The first state, or conditional entries chosen on the first turn."""
    states: dict[Identifier, State]
    """The states, by id: each an action, decision, reflection, recall, annotation,
    side-effect or graph state."""
    topology: str | None = None
    """The abstract topology: a compact map of the graph, checked against the states."""
    variables: dict[Identifier, Any] = field(default_factory=dict)
    """Variables templates may use, with their initial values."""
    slots: dict[Identifier, Slot] = field(default_factory=dict)
    """Typed variables filled from what the user says (in states that `collect` them)."""
    global_exits: tuple[GlobalExit, ...] = ()
    """Exits offered in every action state (and inherited by sub-graphs), checked first."""
    returns: tuple[Identifier, ...] = ()
    """For a graph entered as a sub-graph: the slots copied to the caller's slots of the
    same name when it ends. Its other slots live only while it runs: they start at their
    defaults each time it is entered and are dropped when it ends."""
    clarify: bool | Text = True
    """Whether a chooser unsure between exits may ask which one the user meant ("Do you
    want to change the date, or have the tickets sent again?"), or the question to ask: a
    template reading `candidates` (the exits' labels or descriptions, likeliest first)."""
    speaks_first: bool = False
    """The start state replies before the user types."""
    limits: Limits = field(default_factory=Limits)
    """Loop guards and the history budget."""
    memory: MemoryConfig = field(default_factory=MemoryConfig)
    """When memories are stored, how many are recalled, and where they are kept."""
    tools: tuple[Tool, ...] = ()
    """Python functions that side-effect states call, or action states offer the model."""
    model: ModelConfig = field(default_factory=ModelConfig)
    """Defaults for the language model; the command line overrides them."""
    fallback: Text = "Sorry, I'm having trouble right now. Could you say that again?"
    """What the agent says when the model keeps failing."""
    prompts: dict[PromptKind, str] = field(default_factory=dict)
    """Jinja templates replacing the shipped prompt templates, by kind."""
    acts: dict[Identifier, DialogueAct] = field(default_factory=dict)
    """Dialogue acts the offline chooser recognises, by name. The shipped ones (`done`,
    `no_problem`, `declined`, `hand_off`, `crisis`, `unchanged`) hold unless one of the same
    name replaces them; a graph adds its own (Rasa's conversation patterns)."""
    embedding_model: str | None = None
    """The sentence-transformers model of the offline mode and of memory recall: a folder
    (relative to this file) or an installed package that ships one, e.g. a multilingual
    model. Unset: the packaged all-MiniLM-L6-v2 on ONNX Runtime. Nothing is downloaded."""

    source: Path | None = field(default=None, compare=False, repr=False, metadata=INTERNAL)
    """The file this graph was loaded from (None for a graph built in code); not a key."""
    trust: Trust = field(default_factory=Trust, compare=False, repr=False, metadata=INTERNAL)
    """What the person running cgraph lets it reach besides its folder (`load_graph`'s
    `trust`): the sub-graphs it enters and the tools it calls are held to it; not a key."""
    read_limits: ReadLimits = field(
        default_factory=ReadLimits, compare=False, repr=False, metadata=INTERNAL
    )
    """The limits its sub-graphs are read within (`load_graph`'s `limits`); not a key."""

    def start_states(self) -> tuple[str, ...]:
        if isinstance(self.start, str):
            return (self.start,)
        return tuple(entry.state for entry in self.start)

    def tool(self, name: str) -> Tool | None:
        return next((t for t in self.tools if t.name == name), None)

    def clarify_of(self, state: ActionState) -> bool | str:
        """The state's `clarify:`, else this graph's: off, on, or the question's template."""
        return self.clarify if state.clarify is None else state.clarify

    def embedding_source(self) -> str:
        """`embedding_model` as a folder path when it names one next to this file, else as
        written (a package name); "" for the default model."""
        name = self.embedding_model or ""
        if name and self.source is not None and (self.source.parent / name).is_dir():
            return str((self.source.parent / name).resolve())
        return name


AnyState = (
    ActionState
    | DecisionState
    | ReflectionState
    | RecallState
    | AnnotationState
    | SideEffectState
    | GraphState
)

NEUTRAL: dict[str, Any] = {
    "exit_conditions": None,
    "next_state": None,
    "on_error": None,
    "max_turns": None,
    "enter": None,
    "actions": (),
    "intra_state_navigation_guidelines": (),
    "message_metadata": (),
    "included_contexts": (),
    "collect": (),
    "tiers": (),
}
"""A state type without the key reads this (no exits of its own, no error route, …)."""
# Set once the state types exist: a dataclass reads an attribute its bases have as the
# default of its own field, which would make `actions` optional on an action state.
for _name, _value in NEUTRAL.items():
    setattr(StateFields, _name, _value)


def is_cross(target: str) -> bool:
    """Whether a target names a state of another graph file (`file.yaml#state`)."""
    return CROSS in target


def exits_of(state: AnyState) -> tuple[ExitCondition, ...]:
    """Every declared way out of a state, `next_state` shown as one unnamed exit."""
    conditions = state.exit_conditions
    if conditions:
        return tuple(conditions)
    target = state.next_state
    if target:
        return (ExitCondition(description="continue", next_state=target),)
    return ()


def targets_of(state: AnyState) -> tuple[str, ...]:
    """Every state this one may lead to, `on_error` and `on_limit` included."""
    found = [e.next_state for e in exits_of(state)]
    for extra in (state.on_error, state.on_limit):
        if extra:
            found.append(extra)
    return tuple(found)


def anywhere_targets(graph: Graph) -> tuple[str, ...]:
    """States any state may lead to: global exits' targets and `limits.on_limit`'s."""
    found = [e.next_state for e in graph.global_exits]
    return tuple(dict.fromkeys([*found, *graph.limits.on_limit.values()]))
