"""Structural checks of one valid graph: references, reachability, loops, exits, limits.

Each check is a small generator of diagnostics over a `GraphContext`; `check_graph` runs
them all. Every walk is linear in states plus exits, so a 10,000-state graph lints fast.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

from cgraph.diagnostics import DataPath, Diagnostic, Fix, Severity
from cgraph.spec.kept import StateMemo
from cgraph.spec.limits import ReadLimits
from cgraph.spec.load import closest, did_you_mean, fix_for
from cgraph.spec.model import SILENT_TYPES, AnyState, Graph, anywhere_targets, is_cross
from cgraph.spec.names import END, RESUME
from cgraph.spec.read import Document
from cgraph.spec.templating import BUILTIN_NAMES
from cgraph.spec.trust import Trust

Located = tuple[str, DataPath]  # a target state and the YAML path naming it
T = TypeVar("T")


def field_of(state: AnyState, name: str) -> Any:
    """A state's field, or None if its type has no such field (one dict lookup)."""
    return state.__dict__.get(name)


def targets(name: str, state: AnyState) -> Iterator[Located]:
    """Every state `name` may lead to, with the path of the YAML node that names it."""
    conditions = field_of(state, "exit_conditions")
    if conditions:
        for index, exit_ in enumerate(conditions):
            yield exit_.next_state, ("states", name, "exit_conditions", index, "next_state")
    else:
        next_state = field_of(state, "next_state")
        if next_state:
            yield next_state, ("states", name, "next_state")
    for key in ("on_error", "on_limit"):
        extra = field_of(state, key)
        if extra:
            yield extra, ("states", name, key)


@dataclass
class GraphContext:
    """One graph under lint, with what the cross-file pass learned about its sub-graphs."""

    doc: Document
    graph: Graph
    talking_subgraphs: frozenset[str] = frozenset()
    """`graph` states whose sub-graph has a user-facing state (so they are not silent)."""
    subgraph_names: frozenset[str] = frozenset()
    """Variables its sub-graphs declare (they join the session's when one is entered), and
    the slots they return."""
    dropped_slots: dict[str, str] = field(default_factory=dict)
    """Slots of its sub-graphs that they do not return, with the file declaring each: gone
    when the sub-graph ends, so this graph cannot read them."""
    root: Path | None = None
    """The root graph's folder: no graph file outside it is read (`cgraph.spec.trust`);
    None: this graph's own folder."""
    texts: Mapping[Path, str] = field(default_factory=dict)
    """Files' texts read instead of the disk's (by resolved path): an editor's buffers."""
    memo: StateMemo | None = None
    """What the last lint of this file computed from each state alone (an editor's)."""
    outer_names: frozenset[str] = frozenset()
    """What the graphs that hand over to this one (a sub-graph) define: variables are the
    session's, and a running caller's slots are read through."""
    trust: Trust = field(default_factory=Trust)
    """What the person running lint allows besides the root's folder (`cgraph.spec.trust`)."""
    limits: ReadLimits = field(default_factory=ReadLimits)
    """The limits of what lint reads: the files a graph names, its handlers' sources."""
    edges: dict[str, list[Located]] = field(init=False)
    """Every state's targets, computed once for all checks."""

    def __post_init__(self) -> None:
        self.edges = {name: found for name, found in each_state(self, "targets", _listed_targets)}

    def diag(
        self,
        path: DataPath,
        code: str,
        message: str,
        hint: str,
        *,
        warning: bool = False,
        key: bool = False,
        fix: Fix | None = None,
    ) -> Diagnostic:
        severity = Severity.WARNING if warning else Severity.ERROR
        return self.doc.diag(path, code, message, hint, severity=severity, key=key, fix=fix)


def each_state(
    ctx: GraphContext, kind: str, of: Callable[[GraphContext, str, AnyState], T]
) -> Iterator[tuple[str, T]]:
    """(name, `of(ctx, name, state)`) for every state; with an editor's memo, computed
    only for the states new since its last lint. `of` must depend on nothing but the
    state, its name and the file (a state's data unchanged is its text and place)."""
    memo = ctx.memo
    for name, state in ctx.graph.states.items():
        if memo is None:
            yield name, of(ctx, name, state)
        else:
            yield name, memo.get(kind, state, name, partial(of, ctx, name, state))


def _listed_targets(ctx: GraphContext, name: str, state: AnyState) -> list[Located]:
    return list(targets(name, state))


def start_targets(graph: Graph) -> Iterator[Located]:
    if isinstance(graph.start, str):
        yield graph.start, ("start",)
    else:
        for index, entry in enumerate(graph.start):
            yield entry.state, ("start", index, "state")


def anywhere_located(graph: Graph) -> Iterator[Located]:
    """Targets of global exits and of `limits.on_limit`, with their YAML paths."""
    for index, exit_ in enumerate(graph.global_exits):
        yield exit_.next_state, ("global_exits", index, "next_state")
    for limit, target in graph.limits.on_limit.items():
        yield target, ("limits", "on_limit", limit)


def check_references(ctx: GraphContext) -> Iterator[Diagnostic]:
    """`next_state`, `start`, `on_error`, `on_limit` and `limits.max_visits` name states."""
    names = list(ctx.graph.states)
    known = set(names) | {END, RESUME}
    located = [*start_targets(ctx.graph), *anywhere_located(ctx.graph)]
    for found in ctx.edges.values():
        located.extend(found)
    for target, path in located:
        if target not in known and not is_cross(target):  # cross-graph: cgraph.lint.flows
            yield ctx.diag(
                path,
                "unknown-state",
                f"`{path[-1]}` names `{target}`, which is not a state",
                did_you_mean(target, [*names, END, RESUME])
                + "use a state id from `states:`, `END`, or `RESUME` (after a `resume: true` exit)",
                fix=fix_for(target, [*names, END, RESUME]),
            )
    for name in ctx.graph.limits.max_visits:
        if name not in ctx.graph.states:
            yield ctx.diag(
                ("limits", "max_visits", name),
                "unknown-state",
                f"`limits.max_visits` names `{name}`, which is not a state",
                did_you_mean(name, names) + "use a state id from `states:`",
                key=True,
                fix=fix_for(name, names),
            )


def _successors(ctx: GraphContext) -> dict[str, list[str]]:
    """Each state's targets; a misspelt one (already an unknown-state error) as the state
    it suggests, so one typo is one error, not one more per state it cuts off."""
    states = ctx.graph.states
    known = [*states, END, RESUME]
    found = {name: [_meant(t, states, known) for t, _ in e] for name, e in ctx.edges.items()}
    return {name: [t for t in meant if t is not None] for name, meant in found.items()}


def _meant(target: str, states: Mapping[str, AnyState], known: list[str]) -> str | None:
    if target in states or target in (END, RESUME):
        return target
    return None if is_cross(target) else closest(target, known)


def _reach(starts: list[str], edges: Mapping[str, list[str]]) -> set[str]:
    seen = set(starts)
    queue = deque(starts)
    while queue:
        for nxt in edges.get(queue.popleft(), ()):
            if nxt not in seen:
                seen.add(nxt)
                queue.append(nxt)
    return seen


def check_reachability(ctx: GraphContext) -> Iterator[Diagnostic]:
    """States START never leads to, and states that can never lead to END."""
    graph = ctx.graph
    succ = _successors(ctx)
    entries = (*graph.start_states(), *anywhere_targets(graph))
    starts = [s for s in entries if s in graph.states]
    # With no known start everything is unreachable: the unknown-state error says enough.
    reached = _reach(starts, succ) if starts else set(graph.states)
    preds: dict[str, list[str]] = {}
    for name, nexts in _finishing_edges(ctx, succ).items():
        for nxt in nexts:
            preds.setdefault(nxt, []).append(name)
    # A state with a dangling target already has an error; count it as finishing.
    states = graph.states
    dangling = [
        n
        for n, found in ctx.edges.items()
        if any(t not in states and t not in (END, RESUME) for t, _ in found)
    ]
    # RESUME goes back to a state the conversation was interrupted in: it finishes as that
    # state does. In a graph with no interruption of its own, a parent's: assumed to finish.
    interrupted = _interrupted_in(graph)
    finishing = _reach([END, *dangling, *([] if interrupted else [RESUME])], preds)
    for name in graph.states:
        if name not in reached:
            yield ctx.diag(
                ("states", name),
                "unreachable-state",
                f"state `{name}` cannot be reached from START",
                "lead an exit of another state here, or remove the state",
                key=True,
            )
        elif name not in finishing and (ctx.edges[name] or graph.states[name].type == "action"):
            # (a silent state with no exit at all has its own, clearer error)
            yield ctx.diag(
                ("states", name),
                "no-path-to-end",
                f"END can never be reached from state `{name}`: the conversation cannot finish",
                "add an exit that leads, directly or through other states, to END",
                key=True,
            )


def _finishing_edges(ctx: GraphContext, succ: Mapping[str, list[str]]) -> dict[str, list[str]]:
    """The moves a conversation can make to finish: each state's own exits, the global
    exits an action state offers (a graph may end only through "goodbye" from anywhere),
    and RESUME's way back to each state an interruption was opened in."""
    graph = ctx.graph
    edges = {name: list(nexts) for name, nexts in succ.items()}
    for name, state in graph.states.items():
        if state.type == "action":
            edges[name] += [g.next_state for g in graph.global_exits if name not in g.except_]
    edges[RESUME] = list(_interrupted_in(graph))
    return edges


def _interrupted_in(graph: Graph) -> tuple[str, ...]:
    """The states a `resume: true` exit (the state's own, or a global one offered there)
    may interrupt: where RESUME comes back to."""
    found = []
    for name, state in graph.states.items():
        if state.type != "action":
            continue
        own = any(e.resume for e in field_of(state, "exit_conditions") or ())
        anywhere = any(g.resume and name not in g.except_ for g in graph.global_exits)
        if own or anywhere:
            found.append(name)
    return tuple(found)


def _bounded(ctx: GraphContext, name: str, state: AnyState) -> bool:
    """A visit cap or a (per-turn bounded) reflection stops a silent loop."""
    return (
        state.max_visits is not None
        or name in ctx.graph.limits.max_visits
        or state.type == "reflection"
    )


def _silent(ctx: GraphContext, name: str, state: AnyState) -> bool:
    if state.type == "graph":
        return name not in ctx.talking_subgraphs
    return state.type in SILENT_TYPES


def check_silent_cycles(ctx: GraphContext) -> Iterator[Diagnostic]:
    """A loop of silent, unbounded states would spin inside one turn forever."""
    states = ctx.graph.states
    loose = {n for n, s in states.items() if _silent(ctx, n, s) and not _bounded(ctx, n, s)}
    edges = {n: [t for t, _ in ctx.edges[n] if t in loose] for n in loose}
    order = {name: index for index, name in enumerate(states)}
    for component in strongly_connected(edges):
        if len(component) == 1 and component[0] not in edges[component[0]]:
            continue
        members = sorted(component, key=order.__getitem__)
        loop = " → ".join(f"`{m}`" for m in [*members, members[0]])
        yield ctx.diag(
            ("states", members[0]),
            "silent-cycle",
            f"states {loop} form a loop with no user-facing state: one turn could spin forever",
            "route the loop through an action state, give one state `max_visits`, "
            "or pass through a reflection (bounded by `limits.max_reflections`)",
            key=True,
        )


def strongly_connected(edges: Mapping[str, list[str]]) -> list[list[str]]:
    """Tarjan's algorithm, iterative so deep graphs do not hit the recursion limit."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in edges:
        if root in index:
            continue
        work = [(root, iter(edges[root]))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(edges[child])))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                found.append(component)
    return found


def check_exits(ctx: GraphContext) -> Iterator[Diagnostic]:
    """Decisions need two ways out; descriptions must differ; targets should differ."""
    for _, found in each_state(ctx, "exits", _exits_of):
        yield from found


def _exits_of(ctx: GraphContext, name: str, state: AnyState) -> list[Diagnostic]:
    return list(_state_exits(ctx, name, state))


def _state_exits(ctx: GraphContext, name: str, state: AnyState) -> Iterator[Diagnostic]:
    conditions = field_of(state, "exit_conditions") or ()
    base = ("states", name, "exit_conditions")
    if state.type == "decision" and len(conditions) < 2:
        yield ctx.diag(
            base,
            "decision-exits",
            f"decision state `{name}` has {len(conditions)} exit(s); a decision needs two or more",
            "add another exit, or make the state a reflection with `next_state`",
            key=True,
        )
    yield from _way_out(ctx, name, state)
    seen: dict[str, int] = {}
    # One exit that hands the message on and one that does not are no duplicates: a desk
    # goes back to its hub when it is done, and hands it a request it does not handle.
    targets_seen: dict[tuple[str, bool], int] = {}
    for index, exit_ in enumerate(conditions):
        text = " ".join((exit_.description or "").casefold().split())
        if text and text in seen:
            yield ctx.diag(
                (*base, index, "description"),
                "duplicate-exit",
                f"exits {seen[text] + 1} and {index + 1} of state `{name}` "
                "have the same description",
                "each exit needs its own condition, or the model cannot tell them apart",
            )
        seen.setdefault(text, index)
        way = (exit_.next_state, exit_.handoff)
        if way in targets_seen and exit_.description:
            yield ctx.diag(
                (*base, index, "next_state"),
                "same-target",
                f"exits {targets_seen[way] + 1} and {index + 1} of state `{name}` "
                f"both lead to `{exit_.next_state}`",
                "merge them into one exit with a broader description, if they mean the same",
                warning=True,
            )
        targets_seen.setdefault(way, index)


def check_examples(ctx: GraphContext) -> Iterator[Diagnostic]:
    """One utterance given as an example of two exits makes the offline chooser guess."""
    for _, found in each_state(ctx, "examples", _examples_of):
        yield from found


def _examples_of(ctx: GraphContext, name: str, state: AnyState) -> list[Diagnostic]:
    return list(_state_examples(ctx, name, state))


def _state_examples(ctx: GraphContext, name: str, state: AnyState) -> Iterator[Diagnostic]:
    owner: dict[str, int] = {}
    for index, exit_ in enumerate(field_of(state, "exit_conditions") or ()):
        for number, example in enumerate(exit_.examples):
            text = " ".join(example.casefold().split())
            first = owner.setdefault(text, index)
            if first != index:
                yield ctx.diag(
                    ("states", name, "exit_conditions", index, "examples", number),
                    "duplicate-example",
                    f"`{example}` is an example of exits {first + 1} and {index + 1} "
                    f"of state `{name}`",
                    "keep each example under the one exit it means",
                    warning=True,
                )


def _way_out(ctx: GraphContext, name: str, state: AnyState) -> Iterator[Diagnostic]:
    conditions = field_of(state, "exit_conditions")
    next_state = field_of(state, "next_state")
    if conditions and next_state:
        yield ctx.diag(
            ("states", name, "next_state"),
            "exit-conflict",
            f"state `{name}` has both `exit_conditions` and `next_state`; `next_state` is ignored",
            "keep `exit_conditions`, or use `next_state` alone for a single way out",
            key=True,
        )
    elif state.type in SILENT_TYPES - {"decision"} and not conditions and not next_state:
        yield ctx.diag(
            ("states", name),
            "no-exit",
            f"silent state `{name}` has no way out",
            "add `next_state:` (or `exit_conditions:` with two or more exits)",
            key=True,
        )


def check_start(ctx: GraphContext) -> Iterator[Diagnostic]:
    if isinstance(ctx.graph.start, str):
        return
    seen: dict[str, int] = {}
    for index, entry in enumerate(ctx.graph.start):
        text = " ".join(entry.when.casefold().split())
        if text in seen:
            yield ctx.diag(
                ("start", index, "when"),
                "duplicate-exit",
                f"start entries {seen[text] + 1} and {index + 1} have the same condition",
                "give each entry its own `when`",
            )
        seen.setdefault(text, index)


def check_memory_and_limits(ctx: GraphContext) -> Iterator[Diagnostic]:
    graph = ctx.graph
    for name, state in graph.states.items():
        if graph.memory.store == "off" and field_of(state, "included_contexts"):
            yield ctx.diag(
                ("states", name, "included_contexts"),
                "memory-off",
                f"state `{name}` recalls `included_contexts` but `memory.store` is off, "
                "so no memories are ever stored",
                "set `memory.store: every_turn` (or `session_end`), or remove `included_contexts`",
                warning=True,
                key=True,
            )
        if state.type == "reflection" and graph.limits.max_reflections == 0:
            yield ctx.diag(
                ("states", name),
                "reflection-disabled",
                f"reflection state `{name}` can never run: `limits.max_reflections` is 0",
                "raise `limits.max_reflections`, or remove the reflection",
                warning=True,
                key=True,
            )


def check_names(ctx: GraphContext) -> Iterator[Diagnostic]:
    """Variables named like a built-in would hide it from every template."""
    places: list[tuple[str, DataPath]] = [
        (name, ("variables", name)) for name in ctx.graph.variables
    ]
    for name, state in ctx.graph.states.items():
        places.extend((var, ("states", name, "set", var)) for var in field_of(state, "set") or {})
        result = field_of(state, "result")
        if result:
            places.append((result, ("states", name, "result")))
    for index, tool in enumerate(ctx.graph.tools):
        places.extend((var, ("tools", index, "sets")) for var in tool.sets)
        if tool.result:
            places.append((tool.result, ("tools", index, "result")))
    for var, path in places:
        if var in BUILTIN_NAMES:
            yield ctx.diag(
                path,
                "shadowed-name",
                f"variable `{var}` hides the built-in template name `{var}`",
                "rename the variable",
                warning=True,
                key=path[-1] == var,
            )


STRUCTURE_CHECKS: tuple[Callable[[GraphContext], Iterator[Diagnostic]], ...] = (
    check_references,
    check_start,
    check_reachability,
    check_silent_cycles,
    check_exits,
    check_examples,
    check_memory_and_limits,
    check_names,
)


def check_graph(ctx: GraphContext) -> list[Diagnostic]:
    return [d for check in STRUCTURE_CHECKS for d in check(ctx)]
