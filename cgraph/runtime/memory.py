"""The engine's side of memory: recall into the turn, extract after it, never fail a turn.

Any failure of the memory store (a `MemoryStoreError` or anything else it raises) is
logged as a `memory_error` event and the conversation continues without memories.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from cgraph.backends.memory.policy import Memory, NewMemory, NullMemory
from cgraph.runtime.asking import ask, build_request
from cgraph.spec.model import TIERS, Tier
from cgraph.spec.names import START

if TYPE_CHECKING:
    from cgraph.runtime.engine import Engine


def _view(memory: Memory) -> dict[str, Any]:
    return {"id": memory.id, "text": memory.text, "tier": memory.tier, "score": memory.score}


def recall(
    engine: Engine, state: str, queries: Sequence[str], tiers: tuple[str, ...], top_k: int
) -> list[Memory]:
    """Query the store for this user; record what came back, with scores, in the log."""
    if isinstance(engine.memory, NullMemory):
        return []
    wanted: tuple[Tier, ...] = tuple(t for t in TIERS if t in tiers)
    try:
        found = engine.memory.recall(
            engine.user_id, list(queries), tiers=wanted, top_k=top_k,
            min_score=engine.root.memory.min_score,
        )  # fmt: skip
    except Exception as err:  # memory must never take a conversation down
        engine.emit("memory_error", state=state, operation="recall", error=_text(err))
        return []
    engine.emit("recall", state=state, queries=list(queries), tiers=list(wanted),
                memories=[_view(m) for m in found])  # fmt: skip
    return found


def memory_metadata(engine: Engine) -> dict[str, Any]:
    """What a conditional start may know about the user: whether memories exist."""
    if isinstance(engine.memory, NullMemory):
        return {"has_memories": False, "memory_count": 0}
    try:
        count = engine.memory.count(engine.user_id)
    except Exception as err:
        engine.emit("memory_error", state=START, operation="count", error=_text(err))
        count = 0
    return {"has_memories": count > 0, "memory_count": count}


def wants_extraction(engine: Engine) -> bool:
    """`memory.store`: after every turn (default), once when the session ends, or never."""
    mode = engine.root.memory.store
    if isinstance(engine.memory, NullMemory) or mode == "off":
        return False
    return mode == "every_turn" or engine.snap.completed


def extract(engine: Engine) -> None:
    """One `extract` call over the turn (or the whole session), stored with `memory.add`."""
    if not wants_extraction(engine):
        return
    every_turn = engine.root.memory.store == "every_turn"
    window, _ = engine.history()
    history = _this_turn(engine) if every_turn else window
    request = build_request(
        engine, "extract", graph=engine.root, state_id=engine.qualified(),
        state=engine.current_state(), history=history,
    )  # fmt: skip
    asked = ask(engine, request)
    calls = asked.decision.attempts
    if asked.answer is None:
        engine.emit("memory_error", operation="extract", error="no usable answer", calls=calls)
        engine.commit()
        return
    items = [
        NewMemory(text, tier, engine.session_id, engine.qualified(), engine.snap.turn)
        for tier, text in asked.answer.memories
    ]
    try:
        stored = engine.memory.add(engine.user_id, items) if items else []
    except Exception as err:
        engine.emit("memory_error", operation="add", error=_text(err), calls=calls)
    else:
        engine.emit("memory_stored", calls=calls, memories=[_view(m) for m in stored])
    engine.commit()


def _this_turn(engine: Engine) -> list[dict[str, str]]:
    """The messages of the newest turn: the user's message and the replies after it."""
    start = max((i for i, m in enumerate(engine.transcript) if m["role"] == "user"), default=0)
    return engine.transcript[start:]


def _text(err: Exception) -> str:
    return getattr(err, "message", None) or f"{type(err).__name__}: {err}"
