"""The conversation-test format (`*.test.yaml`) as immutable dataclasses, and its loader.

A test file names a graph and lists cases; a case is a list of turns, each a user message
(or several phrasings of it) and what must hold after it. The published JSON Schema
(`schemas/cgraph-test.schema.json`) is generated from these classes like the graph
format's, and `load_test_file` checks files against exactly that schema, so editors,
`cgraph lint` and `cgraph test` agree on what a valid test file is.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cgraph.diagnostics import Diagnostic, has_errors, shown_path
from cgraph.errors import GraphError
from cgraph.spec.limits import ReadLimits
from cgraph.spec.model import INTERNAL, Identifier, Target, Text, Tier
from cgraph.spec.names import TESTS_KEY
from cgraph.spec.read import Document, read_file

if TYPE_CHECKING:
    from cgraph.spec.conform import SchemaCheck

VERSION_KEY = TESTS_KEY
"""The top-level key that marks a test file (its value is the format version, 1)."""
SCHEMA_NAME = "cgraph-test.schema.json"
SCHEMA_ID = "https://cgraph.dev/schemas/cgraph-test.schema.json"
Phrasings = Text | tuple[Text, ...]


@dataclass(frozen=True, kw_only=True)
class Expect:
    """What must hold after a turn; every key is optional and only given keys are checked."""

    state: Target | None = None
    """The state the turn ends in (`END` once the conversation is over); a sub-graph's
    state by its qualified id, `file.yaml#state`."""
    path: tuple[Text, ...] | None = None
    """Exactly the states the turn went through, from the one it began in."""
    path_includes: tuple[Text, ...] = ()
    """States the turn must go through."""
    path_excludes: tuple[Text, ...] = ()
    """States the turn must not go through."""
    exits: tuple[Text, ...] | None = None
    """Exactly the exits taken, in order: `exit` (its id) or `state -> exit`."""
    reply_contains: Phrasings | None = None
    """Text the reply must contain (case-insensitive); a list means all of them."""
    reply_matches: Text | None = None
    """A regular expression the reply must match (searched, case-sensitive)."""
    reply_excludes: Phrasings | None = None
    """Text the reply must not contain (case-insensitive)."""
    variables: dict[Identifier, Any] = field(default_factory=dict)
    """Variables and the values they must hold after the turn (others are not checked)."""
    annotations: tuple[Text, ...] = ()
    """Tags the conversation must carry after the turn."""
    recalled: tuple[Text, ...] = ()
    """Text that memories recalled during the turn must contain, one memory each."""
    stored: tuple[Text, ...] = ()
    """Text that memories stored after the turn must contain, one memory each."""
    completed: bool | None = None
    """Whether the conversation reached END in this turn."""
    fallback: bool | None = None
    """Whether the reply is the fallback said when the model failed."""
    guard: bool | Text | None = None
    """A loop guard that stopped the turn (its name, or true for any); false for none."""
    clarified: bool | None = None
    """Whether the reply asked which of a few exits the user meant, instead of guessing."""
    interrupted: tuple[Text, ...] | None = None
    """Exactly the states open interruptions will go back to after the turn (`resume:
    true` exits), the next last; `[]` for none."""


@dataclass(frozen=True, kw_only=True)
class TestTurn:
    """One user message and what must hold after it."""

    user: Phrasings
    """The message; a list of phrasings runs the case once per phrasing."""
    expect: Expect = field(default_factory=Expect)
    """What must hold after the turn."""


@dataclass(frozen=True, kw_only=True)
class Start:
    """Where a case begins instead of the graph's start."""

    state: Target
    """A state of the graph, as if the conversation had just entered it; a sub-graph's
    state by its qualified id, `file.yaml#state` (under the `graph` states that enter it)."""
    variables: dict[Identifier, Any] = field(default_factory=dict)
    """Variables set before the first turn (over the file's and the graph's)."""


@dataclass(frozen=True, kw_only=True)
class Case:
    """One conversation: its turns, run in order in a fresh session."""

    name: Text
    """What the case shows; `cgraph test -k` selects cases by it."""
    start: Start | None = None
    """Begin in a given state with given variables (default: the graph's start)."""
    turns: tuple[TestTurn, ...]
    """The user's messages and what must hold after each."""


@dataclass(frozen=True, kw_only=True)
class SeedMemory:
    """A memory the user has before each case starts."""

    text: Text
    """What the user is remembered to have said."""
    tier: Tier = "personal"
    """`personal`, `project` or `task` (a `task` memory is the tested session's)."""


@dataclass(frozen=True, kw_only=True)
class Scripted:
    """Answers given per state instead of a model's (see `cgraph.backends.llm.scripted`)."""

    scripted: dict[str, Any]
    """State id → an answer, or a list of answers used in order (a single one repeats)."""


@dataclass(frozen=True, kw_only=True)
class TestFile:
    """Conversation tests for one context graph."""

    graph: Text
    """The graph file, relative to this file."""
    model: Text | Scripted = "semantic"
    """`semantic` (offline), `replay:FILE`, `scripted:FILE`, a litellm name, or
    `{scripted: {state: answers}}` for judgements the offline model cannot make."""
    user: Identifier = "test"
    """The user id every case talks as (memories are per user)."""
    variables: dict[Identifier, Any] = field(default_factory=dict)
    """Variables set before every case (over the graph's initial values)."""
    memories: tuple[SeedMemory, ...] = ()
    """Memories the user has before every case."""
    cases: tuple[Case, ...]
    """The cases, run in order, each in a fresh session."""

    source: Path | None = field(default=None, compare=False, repr=False, metadata=INTERNAL)
    """The file the tests were loaded from; not a key."""

    @property
    def graph_path(self) -> Path:
        """The graph file, resolved against this file's folder (as messages show it)."""
        folder = self.source.parent if self.source else Path.cwd()
        return shown_path(folder / self.graph)


TestFile.__test__ = False  # type: ignore[attr-defined]  # not a pytest class
TestTurn.__test__ = False  # type: ignore[attr-defined]


def generate() -> dict[str, Any]:
    """The published schema: the dataclasses above plus the `cgraph-test: 1` marker key."""
    import sys

    from cgraph.spec.schema import marked_schema_of

    module = sys.modules[__name__]
    return marked_schema_of(
        module, TestFile, SCHEMA_ID, "cgraph conversation tests", VERSION_KEY, _MARKER
    )


_MARKER = "Format version; this key marks the file as conversation tests."


def looks_like_tests(data: Any) -> bool:
    """True for data whose top level has the `cgraph-test:` key."""
    return isinstance(data, dict) and VERSION_KEY in data


def load_tests(path: str | Path, limits: ReadLimits | None = None) -> TestFile:
    """Load and validate one test file (read within `limits`, default the shipped ones);
    raise `GraphError` (with diagnostics) if invalid."""
    tests, diagnostics = parse_tests(read_file(path, (limits or ReadLimits()).file_size))
    if tests is None or has_errors(diagnostics):
        raise GraphError(f"{path}: invalid test file", diagnostics)
    return tests


def parse_tests(doc: Document) -> tuple[TestFile | None, list[Diagnostic]]:
    """Validate a read document against the test-file schema; problems become diagnostics."""
    from cgraph.spec.load import parse_marked

    hint = "start a test file with `cgraph-test: 1`, `graph:` and `cases:`"
    built, diagnostics = parse_marked(doc, VERSION_KEY, "test", hint, _check())
    return built, diagnostics


def missing_graph(doc: Document, tests: TestFile) -> Diagnostic | None:
    """The test file's `graph:` names no file: an error located there, else None."""
    if tests.graph_path.is_file():
        return None
    return doc.diag(
        ("graph",),
        "graph-missing",
        f"graph `{tests.graph}` does not exist (looked for {tests.graph_path})",
        "the path is relative to the test file",
    )


@cache
def _check() -> SchemaCheck:
    """The shipped schema without its marker key, compiled to build a `TestFile`."""
    import sys

    from cgraph.spec.conform import compile_schema
    from cgraph.spec.schema import published

    schema = dict(published(SCHEMA_NAME))
    schema["properties"] = {k: v for k, v in schema["properties"].items() if k != VERSION_KEY}
    schema["required"] = [k for k in schema["required"] if k != VERSION_KEY]
    return compile_schema(schema, sys.modules[__name__], TestFile)


if __name__ == "__main__":
    from cgraph.spec.schema import dumps

    print(dumps(generate()), end="")
