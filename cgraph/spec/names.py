"""The reserved state names and how states inside sub-graphs are named.

`START` is where a graph is entered (a conditional start is a choice made "at START"),
`END` where a conversation, or a sub-graph, finishes, `RESUME` where an interruption
returns to the state it interrupted. States inside a sub-graph are named
`<file>#<state>`, the file relative to the root graph's folder (`research.yaml#search`,
`sub/deep.yaml#pick`); root states keep their plain id. `#` cannot appear in a state id
(see `model.ID_PATTERN`), so a qualified name is never ambiguous.
"""

from __future__ import annotations

START = "START"
END = "END"
RESUME = "RESUME"
"""Where an interruption ends: back to the state a `resume: true` exit left."""
SEPARATOR = "#"
TESTS_KEY = "cgraph-test"
"""The top-level key of a conversation-test file (`*.test.yaml`), which a graph never has."""
SIM_KEY = "cgraph-sim"
"""The top-level key of a sim file (`*.sim.yaml`)."""


def qualify(graph_key: str, state_id: str) -> str:
    """The unambiguous name of a state: plain at the root, `file#state` in a sub-graph."""
    if not graph_key or state_id == END:
        return state_id
    return f"{graph_key}{SEPARATOR}{state_id}"


def split(name: str) -> tuple[str, str]:
    """`file#state` → (`file`, `state`); a root state's name → ("", name)."""
    graph_key, _, state_id = name.rpartition(SEPARATOR)
    return graph_key, state_id


def bare(name: str) -> str:
    """The state id of a qualified name, without its graph."""
    return split(name)[1]
