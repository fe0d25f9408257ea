"""The simulation format (`*.sim.yaml`) as immutable dataclasses, and its loader.

A sim file names a graph and lists personas: simulated users with facts to give, a goal
the conversation must meet, traits that make them harder to understand, and lines of
their own. `cgraph simulate` talks to the graph as each persona many times. The published
JSON Schema (`schemas/cgraph-sim.schema.json`) is generated from these classes like the
test format's, and `load_sim_file` checks files against exactly that schema, so editors,
`cgraph lint` and `cgraph simulate` agree on what a valid sim file is.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

from cgraph.diagnostics import Diagnostic, has_errors, shown_path
from cgraph.errors import GraphError
from cgraph.spec.limits import ReadLimits
from cgraph.spec.model import INTERNAL, Identifier, Keywords, Target, Text
from cgraph.spec.names import SIM_KEY
from cgraph.spec.read import Document, read_file

if TYPE_CHECKING:
    from cgraph.spec.conform import SchemaCheck

VERSION_KEY = SIM_KEY
"""The top-level key that marks a sim file (its value is the format version, 1)."""
SCHEMA_NAME = "cgraph-sim.schema.json"
SCHEMA_ID = "https://cgraph.dev/schemas/cgraph-sim.schema.json"
SUFFIXES = (".sim.yaml", ".sim.yml")
Share = Annotated[float, Keywords(minimum=0, maximum=1)]
UserKind = Literal["offline", "model"]


@dataclass(frozen=True, kw_only=True)
class Goal:
    """What the conversation must achieve for the run to succeed (it must also reach END)."""

    reach: tuple[Target, ...] = ()
    """States the conversation must enter, in any order."""
    never: tuple[Target, ...] = ()
    """States it must never enter."""
    slots: dict[Identifier, Any] = field(default_factory=dict)
    """Slots and variables and the values they must hold when the conversation ends."""


@dataclass(frozen=True, kw_only=True)
class Traits:
    """How hard this user is to understand; every trait is off by default."""

    typos: Share = 0.0
    """The share of messages with a typo or two and odd casing."""
    fillers: Share = 0.0
    """The share of messages wrapped in fillers ("um, well, ...")."""
    off_topic: Share = 0.0
    """The share of turns spent on a line that answers nothing (the user then says it again)."""
    greets: Share = 0.0
    """The share of runs that open with a greeting before saying what they want."""
    negates: Share = 0.0
    """The share of turns that first say the opposite of an example, then the example."""
    corrects: Annotated[int, Keywords(minimum=0)] = 0
    """How many times the user gives a wrong slot value first and corrects it next turn."""
    patience: Annotated[int, Keywords(minimum=1)] | None = None
    """Re-asks (turns in which nothing changed) in a row before the user gives up; none:
    the user never gives up (the run ends `stuck` instead)."""


@dataclass(frozen=True, kw_only=True)
class Persona:
    """One simulated user: run `runs` times, each with its own seed."""

    name: Text
    """What the persona stands for; reports and `--baseline` match personas by it."""
    facts: dict[Identifier, Any] = field(default_factory=dict)
    """Slot values this user gives when asked (others are made from the slot's type)."""
    goal: Goal = field(default_factory=Goal)
    """What must hold at the end."""
    traits: Traits = field(default_factory=Traits)
    """How the user talks."""
    says: dict[Target, tuple[Text, ...]] = field(default_factory=dict)
    """Lines this user says in a state instead of the planned exit's examples (one per
    run, picked by the seed), meant for the exit the plan takes from there."""
    criteria: tuple[Text, ...] = ()
    """Sentences a judge model checks after the run (`--user model`); shown beside the
    verdicts, gating only with `--gate-on-judge`."""
    runs: Annotated[int, Keywords(minimum=1, maximum=100000)] | None = None
    """Runs of this persona (default: the file's `runs`)."""


@dataclass(frozen=True, kw_only=True)
class SimFile:
    """Simulated users for one context graph."""

    graph: Text
    """The graph file, relative to this file."""
    runs: Annotated[int, Keywords(minimum=1, maximum=100000)] = 20
    """Runs per persona, each with its own seed."""
    max_turns: Annotated[int, Keywords(minimum=1, maximum=1000)] = 30
    """User messages before a run ends `max_turns`."""
    seed: int = 0
    """The master seed; a run's seed is a hash of it, the persona's name and the run's index."""
    stuck_after: Annotated[int, Keywords(minimum=2)] = 4
    """Turns in one state with nothing changing after which the run ends `stuck`."""
    model: Text = "semantic"
    """The model the graph runs with: `semantic` (offline) or a litellm name."""
    user: UserKind = "offline"
    """Who plays the personas: `offline` (a planner over the declared exits) or `model`."""
    user_model: Text | None = None
    """The litellm model that plays the personas with `user: model`."""
    personas: tuple[Persona, ...]
    """The simulated users."""

    source: Path | None = field(default=None, compare=False, repr=False, metadata=INTERNAL)
    """The file the simulation was loaded from; not a key."""

    @property
    def graph_path(self) -> Path:
        """The graph file, resolved against this file's folder (as messages show it)."""
        folder = self.source.parent if self.source else Path.cwd()
        return shown_path(folder / self.graph)


def generate() -> dict[str, Any]:
    """The published schema: the dataclasses above plus the `cgraph-sim: 1` marker key."""
    import sys

    from cgraph.spec.schema import marked_schema_of

    module = sys.modules[__name__]
    return marked_schema_of(
        module, SimFile, SCHEMA_ID, "cgraph simulated users", VERSION_KEY, _MARKER
    )


_MARKER = "Format version; this key marks the file as simulated users."


def looks_like_sim(data: Any) -> bool:
    """True for data whose top level has the `cgraph-sim:` key."""
    return isinstance(data, dict) and VERSION_KEY in data


def load_sim_file(path: str | Path, limits: ReadLimits | None = None) -> SimFile:
    """Load and validate one sim file (read within `limits`, default the shipped ones);
    raise `GraphError` (with diagnostics) if invalid."""
    sim, diagnostics = parse_sim(read_file(path, (limits or ReadLimits()).file_size))
    if sim is None or has_errors(diagnostics):
        raise GraphError(f"{path}: invalid sim file", diagnostics)
    return sim


def parse_sim(doc: Document) -> tuple[SimFile | None, list[Diagnostic]]:
    """Validate a read document against the sim-file schema; problems become diagnostics."""
    from cgraph.spec.load import parse_marked

    hint = "start a sim file with `cgraph-sim: 1`, `graph:` and `personas:`"
    built, diagnostics = parse_marked(doc, VERSION_KEY, "sim", hint, _check())
    return built, diagnostics


@cache
def _check() -> SchemaCheck:
    """The shipped schema without its marker key, compiled to build a `SimFile`."""
    import sys

    from cgraph.spec.conform import compile_schema
    from cgraph.spec.schema import published

    schema = dict(published(SCHEMA_NAME))
    schema["properties"] = {k: v for k, v in schema["properties"].items() if k != VERSION_KEY}
    schema["required"] = [k for k in schema["required"] if k != VERSION_KEY]
    return compile_schema(schema, sys.modules[__name__], SimFile)


if __name__ == "__main__":
    from cgraph.spec.schema import dumps

    print(dumps(generate()), end="")
