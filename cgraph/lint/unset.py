"""Slots a template reads before any path has filled them (`slot-maybe-unset`), and
results (a side effect's, a model-called tool's) read before any path has stored them
(`result-maybe-unset`).

An unset slot renders as no text, so "So that's 4 pizza(s) for ." reaches the user
without an error. A slot without a default is filled by a state that collects it (its
exits wait for it, but for early ones and global exits), a `set:` or a tool's `result:`
stored in it; `reset:` and a `set:` to `none` clear it. A tool's `result:` is stored when
the model calls it from a state that offers it: it counts as filled in that state and after
its `on_tool:` exits, not after the state's other exits (the model may leave without
calling). Which slots are surely filled on entering each state is a forward analysis over
the graph's exits (a slot counts only if every path from the start fills it); a template
that reads one of the others warns. A read guarded by a test (`{% if x %}`,
`x if x else ...`, `x or ...`, `x | default(...)`, `x is none`) is the designer saying it
may be unset.

Only this file's graph is followed: a sub-graph's slots start at their defaults when it is
entered, and what a `graph` state passes in with `with:` is not known here, so a slot the
sub-graph receives that way should have a default or be guarded.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import lru_cache

from jinja2 import TemplateSyntaxError, nodes

from cgraph.diagnostics import DataPath, Diagnostic
from cgraph.lint.structure import GraphContext, field_of
from cgraph.lint.template_ast import read_names
from cgraph.lint.templates import template_strings
from cgraph.spec import conditions
from cgraph.spec.model import ActionState, AnyState, Graph, GraphState, exits_of
from cgraph.spec.templating import text_env

Filled = frozenset[str]
_CLEARS = frozenset({"{{ none }}", "{{ None }}", "{{none}}", "{{None}}"})
_GUARD_FILTERS = frozenset({"default", "d"})


def check_unset_slots(ctx: GraphContext) -> Iterator[Diagnostic]:
    graph = ctx.graph
    slots = frozenset(n for n, slot in graph.slots.items() if slot.default is None)
    stored_by = _results(graph)
    results = frozenset(stored_by) - slots
    tracked = slots | results
    if not tracked:
        return
    filled = filled_on_entry(graph, tracked, results)
    for path, text, extra in template_strings(ctx.doc.data, ctx.memo):
        if extra is None or len(path) < 3 or path[0] != "states":
            continue
        name = str(path[1])
        if name not in filled or _nullable_argument(graph, path):
            continue
        state = graph.states[name]
        ready = filled[name] | _set_here(graph, state, path)
        read = _reads(text) & tracked
        for slot in sorted(read - ready - _guarded(text)):
            if _computed_from_itself(path, slot):
                yield _uninitialised(ctx, path, slot)
                continue
            yield _unset(ctx, path, name, slot, stored_by.get(slot) if slot in results else None)


def _computed_from_itself(path: DataPath, slot: str) -> bool:
    return len(path) == 4 and path[2] == "set" and str(path[3]) == slot


def _uninitialised(ctx: GraphContext, path: DataPath, var: str) -> Diagnostic:
    """`set: {n: "{{ n + 1 }}"}` where a path reaches the state before `n` is filled."""
    return ctx.diag(
        path,
        "uninitialised-variable",
        f"`{var}` is computed from itself, and a path from the start reaches this state "
        "before the slot is filled: that visit fails",
        f"give `{var}` a `default:`, collect it on every path here, or guard the read "
        f"(`{{{{ ({var} or 0) * 2 }}}}`)",
    )


def _unset(ctx: GraphContext, path: DataPath, name: str, var: str, tool: str | None) -> Diagnostic:
    if tool == "":
        return ctx.diag(
            path,
            "result-maybe-unset",
            f"`{var}` may be unset when state `{name}` renders this: a path from the start "
            f"reaches it before the side effect that stores `{var}` has run",
            f"run the side effect on every path to `{name}`, give `{var}` a starting value "
            f"under `variables:`, or guard the read (`{{% if {var} %}}`)",
            warning=True,
        )
    if tool is not None:
        return ctx.diag(
            path,
            "result-maybe-unset",
            f"`{var}` may be unset when state `{name}` renders this: a path from the start "
            f"reaches it without the model calling `{tool}`, whose `result:` it is",
            f"lead to `{name}` through an `on_tool: {tool}` exit, give `{var}` a starting "
            f"value under `variables:`, or guard the read (`{{% if {var} %}}`)",
            warning=True,
        )
    return ctx.diag(
        path,
        "slot-maybe-unset",
        f"`{var}` may be unset when state `{name}` renders this: a path from the "
        "start reaches it without collecting or setting the slot",
        f"collect `{var}` on every path to `{name}`, give it a `default:`, or guard "
        f"the read (`{{% if {var} %}}`, `{{{{ {var} or '…' }}}}`)",
        warning=True,
    )


def _results(graph: Graph) -> dict[str, str]:
    """Variables only a `result:` gives (no starting value) → the tool whose call by the
    model stores it, or "" for a side effect's (a side effect's is said first)."""
    stored = {t.result: t.name for t in graph.tools if t.result}
    for state in graph.states.values():
        result = field_of(state, "result") if state.type == "side_effect" else None
        if result:
            stored[result] = ""
    return {r: tool for r, tool in stored.items() if r not in graph.variables}


def _nullable_argument(graph: Graph, path: DataPath) -> bool:
    """A side effect's argument whose tool parameter accepts null: an unset slot is passed
    as null, which the tool declares it takes."""
    if len(path) != 4 or path[2] != "arguments":
        return False
    tool_name = field_of(graph.states[str(path[1])], "tool")
    tool = next((t for t in graph.tools if t.name == tool_name), None)
    properties = (tool.parameters.get("properties") or {}) if tool is not None else {}
    schema = properties.get(str(path[3]))
    return isinstance(schema, dict) and _accepts_null(schema)


def _accepts_null(schema: dict[str, object]) -> bool:
    kinds = schema.get("type")
    if kinds == "null" or (isinstance(kinds, list) and "null" in kinds):
        return True
    if schema.get("nullable") is True:
        return True
    choices = [*(schema.get("anyOf") or ()), *(schema.get("oneOf") or ())]  # type: ignore[misc]
    return any(isinstance(c, dict) and _accepts_null(c) for c in choices)


def filled_on_entry(
    graph: Graph, tracked: Filled, results: Filled = frozenset()
) -> dict[str, Filled]:
    """State → the tracked slots every path from the start has filled once it is entered
    (after its `reset:`); unreachable states are left out. An exit whose `when:` reads one
    of `results` (names with no value until stored) is taken only once it is stored."""
    entries = [graph.start] if isinstance(graph.start, str) else [e.state for e in graph.start]
    found: dict[str, Filled] = {}
    queue = [(name, frozenset[str]()) for name in entries if name in graph.states]
    while queue:
        name, arriving = queue.pop()
        state = graph.states[name]
        before = found.get(name)
        now = arriving if before is None else before & arriving
        now -= frozenset(field_of(state, "reset") or ())
        if now == before:
            continue
        found[name] = now
        for target, gained, cleared in _moves(graph, name, state, tracked, results):
            if target in graph.states:
                queue.append((target, ((now - cleared) | gained) & tracked))
        for target in _anywhere(graph, name, state):
            if target in graph.states:  # END, RESUME and `file#state` end this graph's paths
                queue.append((target, now))
    return found


def _moves(
    graph: Graph, name: str, state: AnyState, tracked: Filled, results: Filled
) -> Iterator[tuple[str, Filled, Filled]]:
    """(target, slots filled on the way, slots cleared on the way) of each own way out."""
    none: Filled = frozenset()
    if isinstance(state, ActionState):
        collected = frozenset(state.collect)
        for exit_ in state.exit_conditions:  # all but early exits wait for `collect`
            filled = (none if exit_.early else collected) | _when_reads(exit_.when) & results
            tool = graph.tool(exit_.on_tool) if exit_.on_tool else None
            if tool is not None:  # taken once the call succeeded: what it sets is set
                filled |= {*tool.sets, *((tool.result,) if tool.result else ())}
            elif exit_.on_tool:  # an unknown tool is `on-tool-exit`'s error: no more here
                filled = tracked
            yield exit_.next_state, filled, none
    else:
        sets = field_of(state, "set") or {}
        cleared = frozenset(k for k, v in sets.items() if isinstance(v, str) and v in _CLEARS)
        gained = frozenset(sets) - cleared
        result = field_of(state, "result")
        if result:
            gained |= {result}
        if isinstance(state, GraphState):
            gained |= tracked  # what a sub-graph returns is its own check's concern
        for exit_ in exits_of(state):
            yield exit_.next_state, gained | _when_reads(exit_.when) & results, cleared
        on_error = field_of(state, "on_error")
        if on_error:  # the tool failed: no result
            yield on_error, none, none
    if state.on_limit:
        yield state.on_limit, none, none


# `x is defined` holds while `x` is unset: such a condition says nothing of what is stored.
_DEFINED_TEST = re.compile(r"\bis\s+(?:not\s+)?(?:un)?defined\b")


@lru_cache(maxsize=4096)
def _when_reads(when: str | None) -> Filled:
    """The names a `when:` reads, when it can hold only once they all have a value: an
    unset name makes a condition false (`cgraph.spec.conditions.holds`)."""
    if not when or _DEFINED_TEST.search(when):
        return frozenset()
    error, names = conditions.parse(when)
    return frozenset() if error is not None else names


def _anywhere(graph: Graph, name: str, state: AnyState) -> Iterator[str]:
    """Targets of the global exits offered in `name` (taken before its slots are in), and
    of `limits.on_limit`."""
    if isinstance(state, ActionState):
        yield from (e.next_state for e in graph.global_exits if name not in e.except_)
    yield from graph.limits.on_limit.values()


def _set_here(graph: Graph, state: AnyState, path: DataPath) -> Filled:
    """What the state may fill before this text renders: an annotation's `say:` comes
    after its `set:`; the results of the tools an action state offers are stored before
    it answers (whether the model calls one is the designer's to guard)."""
    sets = frozenset(field_of(state, "set") or {}) if path[2] == "say" else frozenset()
    tools = (graph.tool(name) for name in field_of(state, "tools") or ())
    return sets | {t.result for t in tools if t is not None and t.result}


@lru_cache(maxsize=4096)
def _reads(text: str) -> frozenset[str]:
    try:
        return read_names(text_env(), text)
    except Exception:  # a template that does not parse is `template-syntax`'s
        return frozenset()


_GUARDS = (nodes.If, nodes.CondExpr, nodes.Or, nodes.Test, nodes.Filter)


def _tested(node: nodes.Node) -> nodes.Node | None:
    """The part of a guard that is tested: an `if`'s condition, the left of an `or`, what
    a test (`is none`) or a `default` filter reads."""
    if isinstance(node, nodes.If | nodes.CondExpr):
        return node.test
    if isinstance(node, nodes.Or):
        return node.left
    if isinstance(node, nodes.Test):
        return node.node
    if isinstance(node, nodes.Filter) and node.name in _GUARD_FILTERS:
        return node.node
    return None


@lru_cache(maxsize=4096)
def _guarded(text: str) -> frozenset[str]:
    """Names the template tests before it relies on them (parsed, never run)."""
    try:
        tree = text_env().parse(text)
    except (TemplateSyntaxError, ValueError, RecursionError):
        return frozenset()
    tested = [t for t in map(_tested, tree.find_all(_GUARDS)) if t is not None]
    names = {n.name for t in tested for n in t.find_all(nodes.Name)}
    names |= {t.name for t in tested if isinstance(t, nodes.Name)}
    return frozenset(names)
