"""The format's classes compare, hash and print as `@dataclass` would make them."""

from __future__ import annotations

from dataclasses import fields, replace
from pathlib import Path

from cgraph.spec import model
from cgraph.spec.load import load_graph

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "graphs" / "medical_checkin.yaml"


def test_equal_graphs_are_equal_and_hash_alike_and_a_change_shows() -> None:
    first, second = load_graph(EXAMPLE), load_graph(EXAMPLE)
    assert first == second and first is not second
    state = next(iter(first.states.values()))
    twin = second.states[next(iter(second.states))]
    assert state == twin and hash(state) == hash(twin)
    changed = replace(state, objective="something else")
    assert changed != state and state != "not a state"
    assert replace(first, source=None) == first  # `source` is not compared


def test_a_repr_names_the_class_and_its_shown_fields_in_order() -> None:
    graph = load_graph(EXAMPLE)
    for value in [graph, graph.limits, *graph.states.values()]:
        shown = [f"{f.name}={getattr(value, f.name)!r}" for f in fields(value) if f.repr]
        assert repr(value) == f"{type(value).__qualname__}({', '.join(shown)})"
    assert "source=" not in repr(graph)


def test_every_format_dataclass_shares_the_one_comparison() -> None:
    entry = model.StartEntry(when="new user", state="a")
    assert entry == model.StartEntry(when="new user", state="a")
    assert entry != model.StartEntry(when="new user", state="b")
    assert hash(entry) == hash(model.StartEntry(when="new user", state="a"))
    # The format's own classes: not the values a graph keeps from its loader (`Trust`).
    classes = [
        c for c in vars(model).values() if isinstance(c, type) and c.__module__ == model.__name__
    ]
    dataclasses = [c for c in classes if "__dataclass_fields__" in vars(c)]
    assert len(dataclasses) >= 20
    assert all(vars(c)["__eq__"] is vars(model.Graph)["__eq__"] for c in dataclasses)
