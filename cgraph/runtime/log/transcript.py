"""The conversation as prompts read it: its newest messages held, older ones read back.

A session's transcript grows with every turn, but a prompt shows only a window of it (and a
running summary of what left the window). So a session holds the messages from the
window's start on, with their token estimates, and reads an older range back from the
store only when something asks for it (a summary that folds messages in, `/history`).
Places are absolute: message `i` is the `i`-th message of the conversation in effect,
whatever is held.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import overload

from cgraph.runtime.ports import estimate_tokens as estimate_tokens

Message = dict[str, str]
Fetch = Callable[[int, int], list[Message]]
"""Reads the messages at places `start` to `end` (excluded) back from the store."""


def history_start(
    messages: Sequence[Mapping[str, str]],
    start: int,
    budget: int,
    sizes: Sequence[int] | None = None,
) -> int:
    """Where the history window begins, moved forward only when the budget is exceeded.

    The oldest whole turns are *dropped* (not summarised). When the window overflows it is
    cut back to three quarters of the budget, at a user message, so the same prefix is
    then reused for several turns — a window that slid by one message every call would
    change the prompt's prefix every call and defeat prompt caching. The newest message is
    always kept, even if it alone exceeds the budget. `sizes` are the messages' token
    estimates, if the caller keeps them.
    """
    start = min(max(start, 0), max(len(messages) - 1, 0))
    if sizes is None:
        sizes = [estimate_tokens(m["content"]) for m in messages]
    total = sum(sizes[start:])
    if total <= budget:
        return start
    target = budget * 3 // 4
    index = start
    last = len(messages) - 1
    while index < last and (total > target or messages[index]["role"] != "user"):
        total -= sizes[index]
        index += 1
    return index


class Transcript(Sequence[Message]):
    """The messages of a conversation, by place; see the module docstring."""

    def __init__(self, fetch: Fetch, held: list[Message], first: int = 0) -> None:
        self._fetch = fetch
        self.first = first
        """The place of the first message held."""
        self._held = held
        self._sizes: list[int] = []
        """Token estimates of the messages held, measured as the window first reads them."""

    @classmethod
    def whole(cls, messages: list[Message]) -> Transcript:
        """A transcript held whole (the list itself: what is appended to it is read too)."""
        return cls(lambda start, end: [], messages)

    def __len__(self) -> int:
        return self.first + len(self._held)

    @overload
    def __getitem__(self, index: int) -> Message: ...

    @overload
    def __getitem__(self, index: slice) -> list[Message]: ...

    def __getitem__(self, index: int | slice) -> Message | list[Message]:
        if isinstance(index, int):
            place = index + len(self) if index < 0 else index
            if not 0 <= place < len(self):
                raise IndexError(index)
            return self[place : place + 1][0]
        start, stop, step = index.indices(len(self))
        if step != 1:
            raise ValueError("a transcript is read in ranges")
        if stop <= start:
            return []
        older = self._fetch(start, min(stop, self.first)) if start < self.first else []
        return older + self._held[max(start - self.first, 0) : max(stop - self.first, 0)]

    def __reversed__(self) -> Iterator[Message]:
        yield from reversed(self._held)
        end = self.first
        while end > 0:  # rare: a scan that reaches past the window reads back in pages
            start = max(end - 64, 0)
            yield from reversed(self._fetch(start, end))
            end = start

    def __iter__(self) -> Iterator[Message]:
        yield from self[0 : len(self)]

    def measure_again(self) -> None:
        """Forget the token estimates (the messages held were rewritten in place)."""
        self._sizes = []

    def append(self, message: Message) -> None:
        self._held.append(message)

    def window_start(self, first: int, budget: int) -> int:
        """Where the history window begins (`history_start`), from place `first`."""
        if first < self.first:  # the window reaches back past what is held: hold it again
            self._hold_from(first)
        sizes, held = self._sizes, self._held
        sizes += [estimate_tokens(m["content"]) for m in held[len(sizes) :]]
        return self.first + history_start(held, first - self.first, budget, sizes)

    def forget_before(self, place: int) -> None:
        """Let go of the messages before `place` (still in the store, read back if asked)."""
        drop = min(max(place - self.first, 0), max(len(self._held) - 1, 0))
        if drop:
            del self._held[:drop]
            del self._sizes[: min(drop, len(self._sizes))]
            self.first += drop

    def _hold_from(self, place: int) -> None:
        older = self._fetch(place, self.first)
        self._held[:0] = older
        self._sizes[:0] = [estimate_tokens(m["content"]) for m in older]
        self.first = place
