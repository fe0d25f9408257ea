"""The served process freezes its heap once, after its first turn."""

from __future__ import annotations

import gc

import pytest

from cgraph.serve import heap


def test_the_heap_is_frozen_once_after_the_first_turn(monkeypatch: pytest.MonkeyPatch) -> None:
    collected: list[int] = []
    monkeypatch.setattr(heap, "_settled", type(heap._settled)())

    def collect(*_: object) -> int:
        collected.append(1)
        return 0

    monkeypatch.setattr(gc, "collect", collect)
    try:
        heap.settle()
        frozen = gc.get_freeze_count()
        heap.settle()
        assert frozen > 0 and collected == [1]  # the second turn changes nothing
        assert gc.get_freeze_count() == frozen
    finally:
        gc.unfreeze()
