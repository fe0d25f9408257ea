"""The snapshot a step commits."""

from __future__ import annotations


def test_a_stored_snapshot_keeps_every_field_of_the_state_and_reads_back_equal() -> None:
    import json

    from cgraph.runtime.log.snapshots import read_snapshot
    from cgraph.runtime.state.snapshot import (
        Frame,
        HistoryMarks,
        LogPosition,
        SessionState,
        TurnScratch,
        dumps,
    )

    scratch = TurnScratch(
        "hi", 3, 2, 1, True, ("said",), "max_visits", "reset", True, True, "a", ("b", "a")
    )
    state = SessionState(
        stack=(Frame("", "a"), Frame("sub.yaml", "b", True, {"size": 2}, True, "3.1")),
        variables={"x": 1},
        notes=("n",),
        annotations=("t",),
        visits={"a": 2},
        turn=4,
        started=True,
        completed=True,
        last_action=(Frame("sub.yaml", "b", True),),
        marks=HistoryMarks(5, 4, "sum", 3),
        turns_here=2,
        noted=("no tools",),
        interrupted=((Frame("", "a"), Frame("sub.yaml", "c", False, {"size": 1})),),
        asked=("b", "c"),
        correcting={"size": 2},
        clarifications=2,
        scratch=scratch,
    )
    position = LogPosition(seq=40, messages=8, turn_seq=31)
    # Every field differs from its default, so a field the dict forgot would show.
    for kind in (SessionState, TurnScratch, HistoryMarks, Frame):
        made = {
            SessionState: state,
            TurnScratch: scratch,
            HistoryMarks: state.marks,
            Frame: state.stack[-1],
        }[kind]
        defaults = kind._field_defaults
        assert all(getattr(made, name) != defaults.get(name) for name in kind._fields)
    assert read_snapshot(json.loads(dumps(state, position)), list) == (state, position)


def test_a_snapshot_stored_when_limited_was_a_flag_still_loads() -> None:
    from cgraph.runtime.log.snapshots import read_snapshot
    from cgraph.runtime.state.snapshot import Frame, SessionState

    stored = SessionState(stack=(Frame("", "a"),)).to_dict()
    del stored["version"], stored["noted"]
    routed, plain = {**stored, "limited": True}, {**stored, "limited": False}
    # The routing guard's name was not kept: the turn reads as one no guard routed.
    assert read_snapshot(routed, list)[0].scratch.limited is None
    assert read_snapshot(plain, list)[0].scratch.limited is None


def test_a_value_is_made_plain_json_as_a_json_round_trip_makes_it() -> None:
    import json
    import math

    from cgraph.runtime.state.snapshot import jsonable

    values = [
        "text",
        3,
        2.5,
        -0.0,
        True,
        None,
        10**30,
        {"n": 1, "s": "x", "f": 0.1, "b": False, "none": None},
        {"nested": {"a": (1, 2)}, "list": [1, "2"]},
        {1: "a number key", "k": "v"},
        {"when": object()},
        (1, 2),
        {"big": math.inf},
    ]
    for value in values:
        plain = jsonable(value)
        expected = json.loads(json.dumps(value, default=str))
        assert plain == expected and type(plain) is type(expected)
        assert json.dumps(plain) == json.dumps(expected)
    kept = {"n": 1}
    assert jsonable(kept) is not kept  # a copy: the caller's dict may change afterwards
