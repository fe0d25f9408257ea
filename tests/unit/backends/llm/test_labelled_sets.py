"""The labelled sets of the semantic bench: every case becomes a request that offers the
exit it expects. Requests only; no model answers, so no held-out figure is looked at."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from cgraph.runtime.ports import LLMRequest
from cgraph.testing.labelled import Case, graph_of, request_for
from tests.support.labelled_sets import (
    DEV,
    DEV2,
    DEV3,
    DEV4,
    GLOBALS,
    GRAPHS,
    HELDOUT,
    HELDOUT2,
    HELDOUT3,
    HELDOUT4,
    HELDOUT5,
    LABELS,
    load_cases,
)

SETS = [LABELS, DEV, DEV2, DEV3, DEV4, GLOBALS, HELDOUT, HELDOUT2, HELDOUT3, HELDOUT4, HELDOUT5]
GLOBAL_TARGETS = {"emergency_line", "staff_handoff"}
GLOBAL_TARGETS_3 = {"emergency_help", "human_handoff", "danger_line"}
GLOBAL_TARGETS_4 = {"scam_warning", "hazard_waste", "emergency_care"}
GLOBAL_TARGETS_5 = {"food_safety", "vulnerable_support", "injury_help", "vet_now"}
GLOBAL_TARGETS_5 |= {"safeguarding", "pcn_team"}
GLOBAL_TARGETS_DEV3 = {"roadside_help", "librarian_handoff", "cancel_move"}


def _request(case: Case) -> LLMRequest:
    return request_for(case)


def _offered(request: LLMRequest) -> set[str]:
    return {o.id for o in request.options} | ({"stay"} if request.allow_stay else set())


@pytest.mark.parametrize("path", SETS, ids=lambda p: f"{Path(p).parent.name}/{Path(p).name}")
def test_every_expected_exit_is_offered(path: Path) -> None:
    cases = load_cases(path)
    missing = [(c.state, c.expect) for c in cases if c.expect not in _offered(_request(c))]
    assert cases and missing == []


def test_the_second_held_out_set_offers_global_exits_as_a_session_does() -> None:
    cases = load_cases(HELDOUT2)
    taking = [c for c in cases if c.expect in GLOBAL_TARGETS]
    assert len(taking) == 11
    request = _request(taking[0])
    assert request.options[0].anywhere and request.options[0].id == taking[0].expect


def test_the_calibrated_sets_keep_their_requests_without_global_exits() -> None:
    # On the repository's graphs; the dev set's own graphs are offered them, as in a session.
    for path in (LABELS, DEV):
        cases = [c for c in load_cases(path) if c.folder == GRAPHS]
        assert cases and not any(o.anywhere for c in cases for o in _request(c).options)


def test_the_dev_sets_own_graphs_offer_global_exits() -> None:
    cases = [c for c in load_cases(DEV) if c.expect == "pharmacist_handoff"]
    assert cases and all(_request(c).options[0].anywhere for c in cases)


def test_the_second_held_out_set_has_the_kinds_it_promises() -> None:
    kinds = [c.label for c in load_cases(HELDOUT2)]
    minimum = {"opening": 30, "negated": 60, "hedge": 25, "offtopic": 15}
    assert len(kinds) >= 200
    assert all(kinds.count(kind) >= n for kind, n in minimum.items())


def test_the_third_held_out_set_has_the_kinds_it_promises() -> None:
    cases = load_cases(HELDOUT3)
    kinds = [c.label for c in cases]
    minimum = {"opening": 30, "negated": 100, "hedge": 30, "offtopic": 20, "question": 30}
    assert len(cases) >= 450 and {c.graph for c in cases} == {
        "motor_claim.yaml",
        "campus_it_helpdesk.yaml",
        "power_outage.yaml",
    }
    assert all(kinds.count(kind) >= n for kind, n in minimum.items())
    assert all(c.expect == "stay" for c in cases if c.label in ("hedge", "offtopic", "question"))
    assert all(not c.before for c in cases if c.opening)


def test_the_third_held_out_set_offers_its_global_exits_first() -> None:
    taking = [c for c in load_cases(HELDOUT3) if c.expect in GLOBAL_TARGETS_3]
    assert len(taking) == 15 and {c.expect for c in taking} == GLOBAL_TARGETS_3
    assert all(_request(c).options[0].anywhere for c in taking)


def test_the_fourth_held_out_set_has_the_kinds_it_promises() -> None:
    cases = load_cases(HELDOUT4)
    kinds = [c.label for c in cases]
    minimum = {"opening": 30, "negated": 70, "hedge": 25, "offtopic": 15, "question": 15}
    assert len(cases) >= 240 and {c.graph for c in cases} == {
        "parcel_missed_delivery.yaml",
        "bin_collection.yaml",
        "dental_triage.yaml",
    }
    assert all(kinds.count(kind) >= n for kind, n in minimum.items()) and kinds.count("multi") >= 12
    assert all(c.expect == "stay" for c in cases if c.label in ("hedge", "offtopic", "question"))


@pytest.mark.parametrize("path", [HELDOUT4, HELDOUT5], ids=["held-out 4", "held-out 5"])
def test_a_held_out_set_sits_where_its_kinds_say(path: Path) -> None:
    # Openings open the conversation at the start state; decisions sit at decision states.
    cases = load_cases(path)
    opening = [c for c in cases if c.opening]
    assert all(not c.before and graph_of(c).start == c.state for c in opening)
    assert all(c.before for c in cases if not c.opening)
    decided = {
        c.label == "decision" for c in cases if graph_of(c).states[c.state].type == "decision"
    }
    assert decided == {True} and len({c.message.lower() for c in cases}) == len(cases)


def _words(text: str) -> set[str]:
    return set(re.findall(r"[a-z0-9']+", text.lower()))


@pytest.mark.parametrize("path", [HELDOUT4, HELDOUT5, DEV3], ids=["heldout4", "heldout5", "dev3"])
def test_a_set_written_blind_copies_no_example(path: Path) -> None:
    # A message sharing more than half its words with an example of its graph is a copy;
    # bare one-word answers ("no", "nope") are what people type, not copies.
    copies = []
    for case in load_cases(path):
        graph = graph_of(case)
        exits = [*graph.global_exits]
        exits += [
            e for s in graph.states.values() for e in getattr(s, "exit_conditions", None) or ()
        ]
        words = _words(case.message)
        shared = max(len(words & _words(x)) for e in exits for x in (*e.examples, ""))
        if len(words) > 1 and shared > len(words) / 2:
            copies.append(case.message)
    assert copies == []


def test_the_fourth_held_out_set_offers_its_global_exits_first() -> None:
    taking = [c for c in load_cases(HELDOUT4) if c.expect in GLOBAL_TARGETS_4]
    assert len(taking) == 14 and {c.expect for c in taking} == GLOBAL_TARGETS_4
    assert all(_request(c).options[0].anywhere for c in taking)


HELDOUT5_GRAPHS = {
    "grocery_order.yaml",
    "mortgage_hardship.yaml",
    "ski_rental.yaml",
    "pet_claim.yaml",
    "school_admissions.yaml",
    "parking_permits.yaml",
}
KINDS_5 = {"opening", "negated", "hedge", "offtopic", "question", "plain", "paraphrase", "multi"}
KINDS_5 |= {"decision", "correction", "not_leaving"}


def test_the_fifth_held_out_set_has_the_kinds_it_promises() -> None:
    cases = load_cases(HELDOUT5)
    kinds = [c.label for c in cases]
    minimum = {"opening": 30, "negated": 60, "multi": 20, "correction": 30, "not_leaving": 25}
    assert len(cases) >= 300 and {c.graph for c in cases} == HELDOUT5_GRAPHS
    assert set(kinds) <= KINDS_5 and all(kinds.count(kind) >= n for kind, n in minimum.items())
    per_graph = [sum(c.graph == g for c in cases) for g in HELDOUT5_GRAPHS]
    assert all(50 <= n <= 60 for n in per_graph)
    assert all(c.expect == "stay" for c in cases if c.label in ("hedge", "offtopic", "question"))


def test_the_fifth_held_out_set_offers_its_global_exits_first() -> None:
    taking = [c for c in load_cases(HELDOUT5) if c.expect in GLOBAL_TARGETS_5]
    assert len(taking) >= 12 and {c.expect for c in taking} == GLOBAL_TARGETS_5
    assert all(_request(c).options[0].anywhere for c in taking)


def test_the_third_dev_set_has_the_kinds_it_promises() -> None:
    cases = load_cases(DEV3)
    kinds = [c.label for c in cases]
    minimum = {"negated": 100, "opening": 30, "question": 30, "hedge": 15, "condition": 10}
    minimum |= {"offtopic": 5, "multi": 8, "global": 8, "near": 8, "paraphrase": 30}
    assert len(cases) >= 220 and {c.graph for c in cases} == {
        "car_rental.yaml",
        "library_loans.yaml",
        "moving_company.yaml",
    }
    assert all(kinds.count(kind) >= n for kind, n in minimum.items())
    assert all(c.expect == "stay" for c in cases if c.label in ("hedge", "offtopic"))
    assert all(not c.before and graph_of(c).start == c.state for c in cases if c.opening)
    assert len({c.message.lower() for c in cases}) == len(cases)


def test_the_third_dev_sets_graphs_have_examples_on_all_half_and_none_of_their_exits() -> None:
    shares = {}
    for case in load_cases(DEV3):
        graph = graph_of(case)
        exits = [
            e for s in graph.states.values() for e in getattr(s, "exit_conditions", None) or ()
        ]
        shares[case.graph] = sum(bool(e.examples) for e in exits) / len(exits)
    assert shares["car_rental.yaml"] == 1 and shares["moving_company.yaml"] == 0
    assert 0.4 <= shares["library_loans.yaml"] <= 0.6


def test_the_third_dev_set_offers_its_global_exits_first() -> None:
    taking = [c for c in load_cases(DEV3) if c.expect in GLOBAL_TARGETS_DEV3]
    assert len(taking) >= 12 and {c.expect for c in taking} == GLOBAL_TARGETS_DEV3
    assert all(_request(c).options[0].anywhere for c in taking)


def test_the_global_exit_set_is_asked_with_the_graphs_global_exits() -> None:
    cases = load_cases(GLOBALS)
    taking = [c for c in cases if c.label == "global"]
    assert len(taking) == 12 and len(cases) - len(taking) == 12
    assert all(_request(c).options[0].anywhere for c in taking)
    near = {o.id for c in cases if c.label == "near" for o in _request(c).options if o.anywhere}
    assert near == {"emergency", "stopped", "crisis_support", "handoff"}
    (supervisor,) = [c for c in cases if c.state == "supervisor"]  # excepted from "stop"
    assert not any(o.anywhere for o in _request(supervisor).options)


def test_a_calibrated_set_can_be_asked_as_a_session_asks_it() -> None:
    # `bench_semantic.py --global-exits`: the check-in's emergency exit is offered first.
    (case, *_) = [c for c in load_cases(LABELS, True) if c.state == "check_chest_pain"]
    assert _request(case).options[0].id == "emergency"


def test_every_case_asks_the_question_a_session_asks() -> None:
    # An action state's case is asked with the graph's slots, the ones the state collects
    # and still misses, and whether it may clarify (`cgraph.runtime.ask.questions`).
    for path in SETS:
        for case in load_cases(path):
            graph = graph_of(case)
            state = graph.states[case.state]
            if state.type != "action":
                continue
            asked = _request(case).asked
            assert set(asked.slots) == set(graph.slots) and asked.collect == state.collect
            clarifies = graph.clarify if state.clarify is None else state.clarify
            assert asked.may_clarify is (clarifies is not False)


def test_a_case_at_a_collecting_state_is_asked_for_its_slots(tmp_path: Path) -> None:
    source = (GRAPHS / "restaurant_reservation.yaml").read_text(encoding="utf-8")
    (tmp_path / "r.yaml").write_text(source + "clarify: false\n", encoding="utf-8")
    case = Case("r.yaml", "ask_party_size", "we are four", "stay", tmp_path)
    asked = _request(case).asked
    assert asked.collect == ("party_size",) and asked.missing == ("party_size",)
    assert {"party_size", "time", "date"} <= set(asked.slots) and not asked.may_clarify
