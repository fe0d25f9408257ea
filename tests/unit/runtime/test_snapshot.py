"""The snapshot a step commits."""

from __future__ import annotations


def test_snapshot_serialisation_covers_every_field() -> None:
    from dataclasses import fields

    from cgraph.runtime.snapshot import Frame, Snapshot

    snap = Snapshot(stack=[Frame("", "a")], last_action=[Frame("sub.yaml", "b", True)])
    assert set(snap.to_dict()) == {f.name for f in fields(Snapshot)}
    assert Snapshot.loads(snap.dumps()) == snap
