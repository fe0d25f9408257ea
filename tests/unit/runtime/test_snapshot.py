"""The snapshot a step commits."""

from __future__ import annotations


def test_snapshot_serialisation_covers_every_field() -> None:
    from dataclasses import fields

    from cgraph.runtime.state.snapshot import Frame, Snapshot

    snap = Snapshot(stack=[Frame("", "a")], last_action=[Frame("sub.yaml", "b", True)])
    assert set(snap.to_dict()) == {f.name for f in fields(Snapshot)}
    assert Snapshot.loads(snap.dumps()) == snap


def test_a_snapshot_stored_when_limited_was_a_flag_still_loads() -> None:
    from cgraph.runtime.log.snapshots import read_snapshot
    from cgraph.runtime.state.snapshot import Frame, Snapshot

    stored = Snapshot(stack=[Frame("", "a")]).to_dict()
    del stored["version"], stored["turn_seq"], stored["messages"], stored["noted"]
    routed, plain = {**stored, "limited": True}, {**stored, "limited": False}
    # The routing guard's name was not kept: the turn reads as one no guard routed.
    assert read_snapshot(routed, list).limited is None
    assert read_snapshot(plain, list).limited is None


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
