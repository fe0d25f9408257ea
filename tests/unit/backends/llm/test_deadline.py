"""A streamed response read within a deadline: its chunks as they come, `CallTimeout` when
the deadline passes first, and the response closed by its reader either way."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

from cgraph.backends.llm.deadline import CallTimeout, read_within


class Dripping:
    """A response that sends `first`, then one more chunk each time `more` is set."""

    def __init__(self, first: list[str]) -> None:
        self.first, self.more, self.closed = first, threading.Event(), threading.Event()

    def __iter__(self) -> Iterator[str]:
        yield from self.first
        while self.more.wait(10):
            self.more.clear()
            yield "more"

    def close(self) -> None:
        self.closed.set()


def test_the_chunks_come_then_the_deadline_stops_the_read() -> None:
    response = Dripping(["a", "b"])
    ends = time.monotonic() + 0.3
    got = []
    with pytest.raises(CallTimeout):
        for chunk in read_within(response, lambda: ends - time.monotonic()):
            got.append(chunk)
    assert got == ["a", "b"] and not response.closed.is_set()  # its read is still waiting
    response.more.set()  # the next word arrives: the reader sees it was left, and closes
    assert response.closed.wait(5)


def test_a_finished_response_is_closed_and_an_error_is_raised_here() -> None:
    response = Dripping(["a"])
    reading = read_within(response, lambda: 5.0)
    assert next(reading) == "a"
    reading.close()
    response.more.set()
    assert response.closed.wait(5)

    def broken() -> Iterator[str]:
        yield "a"
        raise ConnectionResetError("the server hung up")

    with pytest.raises(ConnectionResetError):
        list(read_within(broken(), lambda: 5.0))
