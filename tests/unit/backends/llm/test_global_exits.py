"""When the offline chooser takes a global exit: clearly, on the message or one clause."""

from __future__ import annotations

from bench.semantic_cases import Case, question_for
from cgraph.backends.embed import shared_embedder
from cgraph.backends.llm.global_exits import (
    CLAUSE_GATE,
    beats,
    cries_for_help,
    near,
    urgent_parts,
)
from cgraph.backends.llm.semantic import SemanticModel
from cgraph.runtime.ports import ExitOption
from tests.unit.backends.llm._chooser import action_request, answer_of, chosen


def test_a_message_of_several_clauses_is_weighed_whole_then_clause_by_clause() -> None:
    said = "I got charged twice and honestly I want to cancel"
    assert urgent_parts(said) == [said, "I got charged twice", "honestly I want to cancel"]
    assert urgent_parts("cancel it, thanks") == ["cancel it, thanks"]


def test_a_global_exit_must_clear_the_floor_staying_and_the_states_own_exits() -> None:
    taken = {"exit": "cancel", "scores": {"cancel": 0.6, "stay": 0.2}}
    assert beats(taken, {"refund": 0.5, "stay": 0.2})
    assert not beats(taken, {"refund": 0.55, "stay": 0.2})  # within the lead
    assert not beats({"exit": "cancel", "scores": {"cancel": 0.45}}, {"refund": 0.1})


def test_a_cry_for_help_takes_a_global_exit_without_a_lead() -> None:
    assert cries_for_help("Help, there's smoke in the corridor")
    assert cries_for_help("it's an emergency, call an ambulance")
    assert not cries_for_help("can you help me change my booking?")
    taken = {"exit": "emergency", "scores": {"emergency": 0.45, "stay": 0.2}}
    assert beats(taken, {"problem": 0.42, "stay": 0.2}, urgent=True)
    assert not beats(taken, {"problem": 0.42, "stay": 0.2})
    assert not beats(taken, {"problem": 0.5, "stay": 0.2}, urgent=True)


def test_smoke_next_door_with_a_cry_for_help_is_an_emergency_at_a_greeting() -> None:
    emergency = ExitOption(
        "emergency",
        "The guest reports an emergency: a fire, smoke, a gas smell, someone hurt or someone "
        "who needs an ambulance.",
        "emergency",
        anywhere=True,
    )
    problem = ExitOption("problem", "The guest reports a problem with their room.", "problem")
    food = ExitOption("food", "The guest wants to order food or room service.", "food")
    asked = "Greet the guest and ask how you can help."
    said = "Help, there's smoke coming from the room next door"
    assert chosen(said, emergency, problem, food, asked=asked) == "emergency"


def test_a_global_exit_that_wins_keeps_the_scores_of_the_exits_it_beat() -> None:
    emergency = ExitOption(
        "emergency", "The guest reports a fire or smoke.", "emergency", anywhere=True
    )
    problem = ExitOption("problem", "The guest reports a problem with their room.", "problem")
    food = ExitOption("food", "The guest wants to order food or room service.", "food")
    asked = "Greet the guest and ask how you can help."
    said = "Help, there's smoke coming from the room next door"
    request = action_request(said, (problem, food, emergency), asked)
    answer = answer_of(SemanticModel(embedder=shared_embedder()), request)
    assert answer["exit"] == "emergency", answer
    scores = answer["scores"]
    assert set(scores) == {"problem", "food", "emergency", "stay"}, scores
    assert scores["emergency"] > max(scores["problem"], scores["food"]) > 0


def test_the_urgent_second_thing_in_a_message_takes_the_global_exit() -> None:
    cancel = ExitOption(
        "cancel",
        "The member wants to cancel their membership.",
        "cancel",
        ("I want to cancel my membership.", "I'd like to quit the gym."),
        anywhere=True,
    )
    twice = ExitOption(
        "refund", "The member was charged twice.", "refund", ("I was charged twice.",)
    )
    failed = ExitOption(
        "card", "The member's card was declined.", "card", ("My card was declined.",)
    )
    said = "I got charged twice and honestly I want to cancel"
    asked = "Ask what happened with the payment."
    assert chosen(said, cancel, twice, failed, asked=asked) == "cancel"


def test_a_message_on_the_states_own_topic_does_not_take_a_global_exit() -> None:
    # The restaurant's party-size state has no described exits of its own; "a table for 4"
    # shares "table" with "I don't want a table anymore" but answers the state's question.
    model = SemanticModel(embedder=shared_embedder())

    def exit_for(message: str) -> str:
        case = Case(
            graph="restaurant_reservation.yaml",
            state="ask_party_size",
            message=message,
            expect="?",
            label="opening",
            global_exits=True,
        )
        return str(answer_of(model, question_for(case))["exit"])

    assert exit_for("Hi, a table for 4") == "stay"
    assert exit_for("Hi, I want to cancel my booking") == "cancelled"
    assert not beats({"exit": "cancel", "scores": {"cancel": 0.55}}, {}, topic=0.6)


def test_only_a_message_near_a_global_exit_is_weighed_clause_by_clause() -> None:
    assert near({"exit": "cancel", "scores": {"cancel": 0.4}}, CLAUSE_GATE)
    assert not near({"exit": "cancel", "scores": {"cancel": 0.3}}, CLAUSE_GATE)
    assert not near({"exit": "stay", "scores": {"stay": 0.9}}, CLAUSE_GATE)
