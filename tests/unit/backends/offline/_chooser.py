"""The offline chooser's answer to one message at an action state, for tests."""

from __future__ import annotations

from functools import cache

from cgraph.backends.embed import shared_embedder
from cgraph.backends.offline.chooser import OfflineChooser
from cgraph.runtime.ports import Choice, ExitOption, Question


@cache
def chooser() -> OfflineChooser:
    return OfflineChooser(embedder=shared_embedder())


def action(message: str, options: tuple[ExitOption, ...], asked: str, **fields: object) -> Question:
    """The question of an action state whose one action is `asked`, after `message`."""
    base: dict[str, object] = dict(
        kind="action",
        state="here",
        objective=asked,
        options=options,
        allow_stay=True,
        stay_prototypes=(asked,),
        authored_reply=asked,
        user_messages=(message,),
    )
    return Question(**{**base, **fields})  # type: ignore[arg-type]


def choice(message: str, *options: ExitOption, asked: str, **fields: object) -> Choice:
    return chooser().choose(action(message, options, asked, **fields))


def chosen(message: str, *options: ExitOption, asked: str) -> str:
    """The exit the chooser (real MiniLM) takes for `message` (`clarify` when it asks)."""
    return choice(message, *options, asked=asked).exit
