"""What a message is, read from its words: yes and no, questions, requests, greetings;
and what the offline chooser remembers of a message."""

from __future__ import annotations

from cgraph.backends.offline.memories import extract_memories
from cgraph.backends.offline.options import counts_as_answer
from cgraph.backends.offline.reading import (
    is_greeting,
    is_question,
    polarity,
    without_greeting,
)
from cgraph.runtime.ports import ExitOption


def test_polarity_reads_yes_and_no() -> None:
    assert polarity("Yes, I did.") == 1
    assert polarity("Nope, haven't touched it.") == -1
    assert polarity("I haven't used any.") == -1
    assert polarity("I took a tablet.") == 0


def test_only_clarifying_questions_pay_the_question_penalty() -> None:
    plain = ExitOption("read", "The user wants to read a file.", "read", ("open main.py",))
    asked = ExitOption("research", "The user asks a research question.", "research", ())
    by_example = ExitOption("more", "A follow-up.", "more", ("which one is best?",))
    assert counts_as_answer("open main.py", plain)
    assert not counts_as_answer("What do you mean by file?", plain)
    assert counts_as_answer("Can you display config.yaml?", plain)
    assert counts_as_answer("Show me notes.txt, please?", plain)
    assert counts_as_answer("What is Docker?", asked)
    assert counts_as_answer("And for beginners?", by_example)


def test_a_greeting_before_the_point_is_dropped() -> None:
    assert without_greeting("Hi there, my card was stolen") == "my card was stolen"
    assert without_greeting("Good morning!") == "Good morning!"
    assert without_greeting("Hiking boots") == "Hiking boots"


def test_a_greeting_alone_is_told_from_a_greeting_with_a_point() -> None:
    for greeting in (
        "Hello Ava, good morning to you.",
        "hi there!",
        "Good morning Dr Smith",
        "Hello, how are you?",
        "good evening, how's it going",
    ):
        assert is_greeting(greeting), greeting
    for point in (
        "Hi, my card was stolen",
        "hello, I'm ready",
        "Hey, no",
        "Morning! Feeling great today",
        "Hello, it's about my card",
    ):
        assert not is_greeting(point), point


def test_no_problem_is_a_yes() -> None:
    assert polarity("no problem, please send the request") == 1


def test_an_open_question_needs_no_question_mark() -> None:
    assert is_question("what's the best pizza place near the airport")
    assert not is_question("how about Thursday")


def test_examples_that_request_the_exit_do_not_make_it_expect_questions() -> None:
    deliver = ExitOption("d", "The customer wants it delivered.", "d", ("Can you send it?",))
    assert not counts_as_answer("does delivery cost anything?", deliver)


def test_a_request_for_the_exits_action_is_not_a_clarifying_question() -> None:
    refill = ExitOption("refill", "The owner needs more of their pet's medication.", "refill")
    assert counts_as_answer("can I pick up more of the ear drops you gave us", refill)
    assert counts_as_answer("could someone collect it from my house?", refill)
    assert not counts_as_answer("can I ask what the drops are for?", refill)
    # For someone else, or where a thing can be done: still asking for the exit's action.
    card = ExitOption("join", "The person wants to join the library.", "join")
    assert counts_as_answer("can my daughter get her own card? she's 9", card)
    assert counts_as_answer("is there somewhere we can keep our furniture?", card)
    assert not counts_as_answer("how do I upload it?", card)


def test_an_exit_asked_for_expects_a_request_not_any_question() -> None:
    later = ExitOption("late", "The guest asks to check out later than usual.", "late")
    booking = ExitOption("booking", "The guest asks about their booking.", "booking")
    assert not counts_as_answer("is the pool open today?", later)
    assert counts_as_answer("could I keep the room until 3 tomorrow?", later)
    assert counts_as_answer("is my room ready?", booking)


def test_extraction_keeps_statements_verbatim_with_tiers() -> None:
    assert extract_memories(("I always walk my dog after lunch.",)) == [
        {"tier": "personal", "text": "I always walk my dog after lunch."}
    ]
    assert extract_memories(("I took my pills this morning.",))[0]["tier"] == "task"
    assert extract_memories(("What is nitroglycerin?",)) == []
    assert extract_memories(("Okay.",)) == []
