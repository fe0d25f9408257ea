"""Flows across graph files at run time: a sub-graph inherits its parents' global exits
(with the model and offline), a `graph` state's `enter:` begins the sub-graph at a named
state, and `next_state: other.yaml#state` moves the session into another graph and back.
"""

from __future__ import annotations

from pathlib import Path

from cgraph.backends.llm.scripted import ScriptedModel
from cgraph.session import Session
from tests.unit.runtime._runtime import action, go, simple, stay, write

INNER = "flows/order.yaml"


def _depth(session: Session) -> int:
    """How many graphs deep the session is (1: the root's states)."""
    return len(session._engine.state.stack)


CANCEL = [
    "Cancel everything.",
    "Forget it, cancel the whole order.",
    "I don't want anything anymore, cancel it.",
]


def _order(folder: Path) -> None:
    """The sub-graph: pick an item, then its size; it ends when both are known."""
    body = action("item", {"size": "The user has named the item they want."}) + action(
        "size", {"END": "The user has named the size."}, say="What size?"
    )
    write(folder, simple(name="order", start="item", body=body), INNER)


def _shop(folder: Path, enter: str = "") -> Path:
    """The root: a global cancel (not in `calm`), two `graph` states entering the order."""
    _order(folder)
    entering = f"    enter: {enter}\n" if enter else ""
    top = (
        "global_exits:\n"
        "  - description: The user wants to cancel the whole order.\n"
        "    next_state: cancelled\n"
        f"    examples: {CANCEL}\n"
        "    except: [calm]\n"
    )
    body = (
        action("a", {"order": "The user wants to order.", "calm": "The user wants a quiet order."})
        + f"""\
  order:
    type: graph
    objective: Take the order.
    graph: {INNER}
{entering}    next_state: done
  calm:
    type: graph
    objective: Take the order, no cancelling.
    graph: {INNER}
    next_state: done
  cancelled:
    type: annotation
    objective: The order was cancelled.
    say: Your order is cancelled.
    next_state: END
"""
        + action("done", {"END": "The user says goodbye."})
    )
    return write(folder, simple(name="shop", start="a", body=body, top=top))


def test_a_sub_graph_offers_its_parents_global_exits_to_the_model(tmp_path: Path) -> None:
    inner = f"{INNER}#item"
    model = ScriptedModel(
        {"a": [stay("hello"), go("order")], inner: [stay("which item?"), go("cancelled")]}
    )
    session = Session.start(_shop(tmp_path), model=model)
    session.send("hi")
    assert session.send("I'd like to order").state == inner
    request = model.requests_for(inner)[-1]
    assert [o.id for o in request.options if o.anywhere] == ["cancelled"]
    assert request.options[0].anywhere  # listed first
    turn = session.send("cancel it all")
    assert turn.path == (inner, "cancelled") and turn.completed
    assert turn.reply == "Your order is cancelled." and _depth(session) == 1


def test_except_on_the_graph_state_holds_in_every_state_inside(tmp_path: Path) -> None:
    inner = f"{INNER}#item"
    model = ScriptedModel({"a": [stay("hello"), go("calm")], inner: [stay("which item?")]})
    session = Session.start(_shop(tmp_path), model=model)
    session.send("hi")
    session.send("a quiet order please")
    assert session.state == inner
    assert not [o for o in model.requests_for(inner)[-1].options if o.anywhere]
    assert "cancelled" not in model.exit_enum(inner)


def test_offline_a_global_exit_leaves_the_sub_graph(tmp_path: Path) -> None:
    session = Session.start(_shop(tmp_path), model="semantic")
    session.send("hello")
    assert session.send("I want to order.").state == f"{INNER}#item"
    turn = session.send("Forget it, cancel the whole order.")
    assert turn.path == (f"{INNER}#item", "cancelled") and turn.completed
    assert turn.reply == "Your order is cancelled."


def test_offline_except_keeps_the_global_exit_out_of_the_sub_graph(tmp_path: Path) -> None:
    session = Session.start(_shop(tmp_path), model="semantic")
    session.send("hello")
    assert session.send("I want a quiet order.").state == f"{INNER}#item"
    turn = session.send("Forget it, cancel the whole order.")
    assert not turn.completed and "cancelled" not in turn.path


def test_a_graph_state_enter_begins_the_sub_graph_at_that_state(tmp_path: Path) -> None:
    model = ScriptedModel(
        {
            "a": [stay("hello"), go("order")],
            f"{INNER}#size": [stay("What size?"), go("END", "small")],
        }
    )
    session = Session.start(_shop(tmp_path, enter="size"), model=model)
    session.send("hi")
    turn = session.send("I'd like to order")
    assert turn.path == ("a", "order", f"{INNER}#size") and turn.reply == "What size?"
    entered = turn.transitions[-1]
    assert entered.exit_id == "size" and "enter" in entered.reason
    assert not model.requests_for(f"{INNER}#item")


def test_a_graph_state_enter_counts_as_a_visit_of_that_state(tmp_path: Path) -> None:
    session = Session.start(_shop(tmp_path, enter="size"), model="semantic")
    session.send("hello")
    session.send("I want to order.")
    assert session._engine.state.visits == {"a": 1, "order": 1, f"{INNER}#size": 1}


# ----- next_state: other.yaml#state ----------------------------------------------------------


def _crossing(folder: Path, nested: bool) -> Path:
    """`a` moves across to `flows/order.yaml#size`; nested, the crossing graph is itself a
    sub-graph of the root, so the order's END returns to the root's `graph` state."""
    _order(folder)
    crossing = simple(
        name="side",
        start="a",
        body=action("a", {f"{INNER}#size": "The user already knows the item."}),
    )
    if not nested:
        return write(folder, crossing)
    write(folder, crossing, "side.yaml")
    body = """\
  s:
    type: graph
    objective: Run the side flow.
    graph: side.yaml
    next_state: done
""" + action("done", {"END": "The user says goodbye."}, say="All done.")
    return write(folder, simple(name="root", start="s", body=body))


def test_a_cross_graph_move_enters_the_other_graph_and_ends_with_it(tmp_path: Path) -> None:
    size = f"{INNER}#size"
    model = ScriptedModel(
        {"a": [stay("hello"), go(f"{INNER}#size")], size: [stay("What size?"), go("END")]}
    )
    session = Session.start(_crossing(tmp_path, nested=False), model=model)
    session.send("hi")
    turn = session.send("the usual")
    assert turn.path == ("a", size) and session.state == size and _depth(session) == 1
    assert turn.transitions[-1].exit_id == size
    turn = session.send("large")
    assert turn.completed and turn.path == (size,) and turn.transitions[-1].to_state == "END"


def test_a_cross_graph_move_inside_a_sub_graph_returns_to_the_parent(tmp_path: Path) -> None:
    size, side = f"{INNER}#size", "side.yaml#a"
    model = ScriptedModel(
        {
            side: [stay("hello"), go(f"{INNER}#size")],
            size: [stay("What size?"), go("END")],
            "done": [stay("bye")],
        }
    )
    session = Session.start(_crossing(tmp_path, nested=True), model=model)
    session.send("hi")
    assert session.send("the usual").path == (side, size)
    assert _depth(session) == 2
    turn = session.send("large")
    assert turn.path == (size, "s", "done") and turn.reply == "bye"
    assert _depth(session) == 1 and not turn.completed


def test_resume_in_the_other_graph_after_a_cross_graph_move(tmp_path: Path) -> None:
    size = f"{INNER}#size"
    store = tmp_path / "sessions.sqlite"
    path = _crossing(tmp_path, nested=True)
    first = ScriptedModel({"side.yaml#a": [stay("hello"), go(size)], size: [stay("What size?")]})
    session = Session.start(path, model=first, store=store, session_id="s1")
    session.send("hi")
    session.send("the usual")
    later = ScriptedModel({size: [go("END")], "done": [stay("bye")]})
    resumed = Session.resume("s1", store=store, model=later, graph=path)
    assert resumed.state == size and _depth(resumed) == 2
    assert resumed.send("large").path == (size, "s", "done")
