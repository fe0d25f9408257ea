"""A full run of every example graph in graphs/, driven by a scripted walker.

The walker explores first (rotating through each action state's exits, chatting every
other turn; silent states take their first exit) and then heads for END by the shortest
declared route. Every run must finish, hit
no guard and no fallback, apply only declared transitions, and cost exactly one LLM call
on every turn that stays in its state.
"""

from __future__ import annotations

import re
from collections import Counter, deque
from pathlib import Path
from typing import Any

import pytest

from cgraph.backends.llm.scripted import ScriptedModel
from cgraph.runtime.ports import LLMRequest
from cgraph.runtime.routes.exits import check_transition, exit_options
from cgraph.session import Session
from cgraph.spec.load import load_graph
from cgraph.spec.model import Graph, anywhere_targets, exits_of
from cgraph.spec.names import END, RESUME, SEPARATOR, START, bare, split
from tests.conftest import GRAPHS

EXAMPLES = sorted(GRAPHS.glob("*.yaml"))
EXPLORE = 16
# Words the example tools understand (a file, a topic, a skill), so their calls succeed.
MESSAGE = "Yes: please summarize main.py and tell me about langgraph."


def distances(graph: Graph, detours: bool = False) -> dict[str, int]:
    """Exits to END from each state (within its own graph); with `detours`, to `RESUME`
    too, which ends a detour as END ends a graph (so a hub of `resume: true` exits is
    explored through its detours, not walked straight to its goodbye)."""
    back: dict[str, list[str]] = {}
    for name, state in graph.states.items():
        for condition in exits_of(state):
            back.setdefault(condition.next_state, []).append(name)
    ends = [END, RESUME] if detours else [END]
    found, queue = dict.fromkeys(ends, 0), deque(ends)
    while queue:
        node = queue.popleft()
        for source in back.get(node, []):
            if source not in found:
                found[source] = found[node] + 1
                queue.append(source)
    return found


# Values a walk needs to get past a `when:` branch that would end it at once.
WALKED = {"age": 35}  # the insurance quote ends below 18


def slot_value(name: str, schema: dict[str, Any]) -> Any:
    """A value the slot accepts (the example intake's record says 1983-01-01)."""
    if name in WALKED:
        return WALKED[name]
    if schema.get("enum"):
        return schema["enum"][0]
    kind = schema["type"][0]
    if kind == "boolean":
        return True
    if kind in ("integer", "number"):
        return max(2, schema.get("minimum", 2))
    if schema.get("pattern"):
        return matching(schema["pattern"])
    return {"date": "1983-01-01", "time": "19:00"}.get(schema.get("format", ""), "text")


def matching(pattern: str) -> str:
    """The shortest text a simple regular expression matches (`^LIB-[0-9]{6}$` →
    `LIB-000000`): literals, classes, repeats, groups and alternatives, the first of each."""
    from re import _parser as parser  # type: ignore[attr-defined]

    def text(items: Any) -> str:
        out = []
        for op, value in items:
            name = str(op)
            if name == "LITERAL":
                out.append(chr(value))
            elif name == "IN":
                first_op, first = value[0]
                out.append(chr(first[0] if str(first_op) == "RANGE" else first))
            elif name in ("MAX_REPEAT", "MIN_REPEAT"):
                low, _, item = value
                out.append(text(item) * low)
            elif name == "SUBPATTERN":
                out.append(text(value[-1]))
            elif name == "BRANCH":
                out.append(text(value[1][0]))
        return "".join(out)

    found = text(parser.parse(pattern))
    assert re.search(pattern, found), (pattern, found)
    return found


class Walker:
    def __init__(self, root: Graph) -> None:
        self.root = root
        self.turn = 0
        self.rotation: Counter[str] = Counter()

    def graph_of(self, state: str) -> Graph:
        key = split(state)[0]
        if not key:
            return self.root
        assert self.root.source is not None
        return load_graph(self.root.source.parent / key)

    def __call__(self, request: LLMRequest) -> dict[str, Any]:
        ids = [o.id for o in request.options]
        if request.kind == "extract":
            return {"memories": []}
        if request.kind == "action" and (request.entered_this_turn or self.turn % 2 == 1):
            return {"exit": "stay", "reason": "chat", "reply": f"Reply from {request.state}."}
        if request.kind == "action" and request.asked.missing:  # fill what is still unset
            slots = {n: slot_value(n, request.slots[n]) for n in request.collect}
            return {"exit": "stay", "reason": "fill", "reply": "Noted.", "slots": slots}
        answer: dict[str, Any] = {"exit": self.choose(request, ids), "reason": "walk", "reply": ""}
        if request.kind == "reflection":
            answer["note"] = "a note"
        if request.slots:  # fill every slot asked for here with a value it accepts
            answer["slots"] = {n: slot_value(n, request.slots[n]) for n in request.collect}
        return answer

    def choose(self, request: LLMRequest, ids: list[str]) -> str:
        far = distances(self.graph_of(request.state))
        targets = {o.id: o.target for o in request.options}
        if request.kind in ("decision", "reflection", "graph"):
            return ids[0]  # silent states: the first declared exit is the usual way on
        if self.turn <= EXPLORE or request.kind == "start":
            # Explore: the deepest exits first, rotating, so most states get visited.
            deep = distances(self.graph_of(request.state), detours=True)
            ordered = sorted(ids, key=lambda i: -deep.get(targets[i], 0))
            ordered = [i for i in ordered if i != END] or ordered
            choice = ordered[self.rotation[request.state] % len(ordered)]
            self.rotation[request.state] += 1
            return choice
        return min(ids, key=lambda i: far.get(targets[i], 999))


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_every_example_graph_runs_to_its_end(path: Path) -> None:
    root = load_graph(path)
    walker = Walker(root)
    model = ScriptedModel({"*": walker, "start": walker})
    session = Session.start(root, model=model, user_id="walker")
    turns = []
    for number in range(1, 80):
        walker.turn = number
        turns.append(session.send(MESSAGE))
        if session.completed:
            break
    assert session.completed, f"{path.name} did not reach END; stuck in {session.state}"
    assert not any(t.guard or t.fallback for t in turns)
    assert all(t.reply for t in turns[:-1])  # only the turn that reaches END may say nothing
    stays = [t for t in turns[1:] if not t.transitions]
    assert stays or len(turns) == 2  # a graph done on its second turn has no stay after the first
    assert all(t.llm_calls == 1 for t in stays)
    for record in session.audit:  # every move the session made is one the graph declares
        source = record.from_state
        target = RESUME if record.resumed else record.to_state  # back where it was
        if source == START or (SEPARATOR in source) != (SEPARATOR in target):
            continue  # entering or leaving a sub-graph: checked by its start entries
        graph = walker.graph_of(source)
        if bare(target) in anywhere_targets(graph) and record.exit_id not in (
            o.id for o in exit_options(graph.states[bare(source)])
        ):
            continue  # a global exit or an `on_limit` route, declared at the graph's top
        check_transition(graph, bare(source), bare(target))
    visited = {t.to_state for t in session.audit}
    assert len(visited & set(root.states)) >= len(root.states) // 2
    failed = [e for e in session.events() if e.kind == "tool_call" and e.data["status"] == "failed"]
    assert failed == []
