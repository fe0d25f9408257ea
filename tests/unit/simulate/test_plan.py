from __future__ import annotations

from cgraph.simulate.plan import Planner
from cgraph.spec.load import load_graph
from tests.conftest import FIXTURES, GRAPHS

HELPDESK = FIXTURES / "sim" / "helpdesk.yaml"


def test_the_shortest_path_goes_through_the_goal_and_around_never() -> None:
    planner = Planner(load_graph(HELPDESK))
    path = planner.path("greet", ["lookup", "resolved"], ["operator"], {"order_number": "AB1234"})
    assert path is not None
    assert [s.target for s in path] == ["order_problem", "lookup", "resolved", "END"]
    assert sum(s.turns for s in path) == 3  # the lookup is silent: no message of its own


def test_a_when_on_what_the_user_knows_decides_the_branch() -> None:
    planner = Planner(load_graph(GRAPHS / "restaurant_reservation.yaml"))
    small = {"party_size": 4, "time": "19:00", "date": None}
    assert [s.target for s in planner.steps("ask_party_size", small)][-1] == "ask_time"
    large = {**small, "party_size": 20}
    targets = [s.target for s in planner.steps("ask_party_size", large)]
    assert "large_party" in targets and "ask_time" in targets  # the else holds too


def test_no_path_when_never_blocks_every_way_to_the_goal() -> None:
    planner = Planner(load_graph(HELPDESK))
    assert planner.path("greet", ["operator"], ["END"]) is None


def test_a_sub_graph_state_is_planned_in_its_own_file() -> None:
    planner = Planner(load_graph(GRAPHS / "contacts.yaml"))
    steps = planner.steps("add_contact.yaml#ask_handle", {"handle": "@sam"})
    assert {s.source for s in steps} == {"add_contact.yaml#ask_handle"}
    assert any(s.target == "add_contact.yaml#ask_name" for s in steps)
    path = planner.path("add_contact.yaml#ask_handle", [], [], {"handle": "@sam"})
    assert path is not None and path[-1].target == "END"
