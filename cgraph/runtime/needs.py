"""What a turn waits on, as data: the engine is sans-IO, and two drivers serve it.

A turn's code — the engine, the handlers, the questions they ask — never calls a model, a
memory store, a tool or the session store itself. It is a generator (`Steps`) that yields
a `Need` ("answer this request with this model", "run this call outside") and is resumed
with the answer, or with the exception the call raised thrown in at the `yield`, as h11
and h2 leave the socket to their caller. One engine, two drivers:

- `drive` (blocking): each need done in the calling thread. `cgraph run`, `cgraph test`,
  the studio and the Python API.
- `drive_async` (asyncio): a model is awaited (`AsyncModel.acomplete`), so a turn waiting on
  it holds no thread and no connection, and so is a store statement that can be (an
  `Offload`'s `acall`: the PostgreSQL store's commits on the server's loop); the rest is
  short, blocking work (a recall from the embedded memory, a tool, a SQLite statement)
  handed to the caller's executor. The server.

The drivers differ in nothing but how they wait: every step's logic is the same code.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Awaitable, Callable, Generator
from concurrent.futures import Executor
from contextvars import ContextVar
from dataclasses import dataclass
from functools import partial
from typing import Any, Literal, TypeVar, cast

from cgraph.runtime.ports import AsyncModel, ChatModel, LLMRequest

T = TypeVar("T")

Work = Literal["store", "memory", "tool", "model"]
"""What kind of blocking call an `Offload` is (the async driver may run each apart)."""


@dataclass(frozen=True, slots=True)
class Complete:
    """Answer `request` with `model`: the raw text, or `LLMError` thrown in."""

    model: ChatModel
    request: LLMRequest


@dataclass(frozen=True, slots=True)
class Offload:
    """Run `call()`, a blocking call outside the turn's logic: its value, or its error.
    With `acall`, the async driver awaits `acall()` instead, the same call on its loop."""

    call: Callable[[], Any]
    work: Work
    acall: Callable[[], Awaitable[Any]] | None = None


Need = Complete | Offload
Steps = Generator[Need, Any, T]
"""A piece of a turn: yields needs, is sent their answers, returns its value."""


def done(value: T) -> Steps[T]:
    """Steps that need nothing: `value` at once (a chooser that reads messages itself)."""
    return value
    yield  # pragma: no cover - makes this a generator


def drive(steps: Steps[T]) -> T:
    """The blocking driver: every need done here, in this thread."""
    answer: Any = None
    error: BaseException | None = None
    while True:
        try:
            need = steps.send(answer) if error is None else steps.throw(error)
        except StopIteration as finished:
            return finished.value  # type: ignore[no-any-return]
        answer, error = None, None
        try:
            answer = _blocking(need)
        except BaseException as err:  # the step's own `try` sees it, as if it had called
            error = err


def _blocking(need: Need) -> Any:
    if isinstance(need, Complete):
        return need.model.complete(need.request)
    return need.call()


Offloader = Callable[[Offload], Awaitable[Any]]
"""How the async driver runs blocking work (`in_pool`: a small thread pool, in the server)."""


async def drive_async(steps: Steps[T], offload: Offloader) -> T:
    """The asyncio driver: a model that `awaits` and an `Offload` with an `acall` are
    awaited on this loop; other models and every other `Offload` go to `offload`, a run
    of them in one hop (`_Blocking`): the steps between two awaited calls go on in the
    worker, which hands them back at the next need to await (a turn of a scripted model
    is one hop, not one per statement)."""
    answer: Any = None
    error: BaseException | None = None
    cancelled = False  # during a call that was finished: thrown in at the next need
    while True:
        try:
            need = steps.send(answer) if error is None else steps.throw(error)
        except StopIteration as finished:
            if cancelled:
                raise asyncio.CancelledError from None
            return finished.value  # type: ignore[no-any-return]
        answer, error = None, None
        if cancelled:  # where the steps wait now, as `drive` would have
            error, cancelled = asyncio.CancelledError(), False
            continue
        if not _awaits(need):
            ran, value, cancelled = await _hop(_Blocking(steps, need), offload)
            if ran == "done":
                if cancelled:
                    raise asyncio.CancelledError
                return value  # type: ignore[no-any-return]
            need = value
            if cancelled:
                error, cancelled = asyncio.CancelledError(), False
                continue
        if isinstance(need, Offload):
            answer, error, cancelled = await _finished(cast(Awaited, need.acall))
            continue
        try:
            answer = await cast(AsyncModel, need.model).acomplete(need.request)
        except BaseException as err:  # cancelled included: the step unwinds as in `drive`
            error = err


Awaited = Callable[[], Awaitable[Any]]


def _awaits(need: Need) -> bool:
    if isinstance(need, Offload):
        return need.acall is not None
    return need.model.capabilities.awaits


async def _finished(acall: Awaited) -> tuple[Any, BaseException | None, bool]:
    """`acall()` awaited to its end, also when this task is cancelled meanwhile (a store
    statement under way is not abandoned half-known, as a worker's is not): its value or
    its error, and whether a cancellation came."""
    future = asyncio.ensure_future(acall())
    cancelled = False
    while True:
        try:
            return await asyncio.shield(future), None, cancelled
        except asyncio.CancelledError as err:
            if not future.done():
                cancelled = True
                continue
            return None, err, cancelled
        except BaseException as err:  # the step's own `try` sees it, as if it had called
            return None, err, cancelled


class _Blocking:
    """Blocking needs done one after another in a worker, each answer (or error) sent in,
    until the steps finish (`("done", value)`) or yield a need to await (`("need", it)`).
    The steps are the worker's until it returns: the loop never resumes them meanwhile."""

    __slots__ = ("need", "steps")

    def __init__(self, steps: Steps[Any], need: Need) -> None:
        self.steps, self.need = steps, need

    def __call__(self) -> tuple[str, Any]:
        need = self.need
        while True:
            answer: Any = None
            error: BaseException | None = None
            try:
                answer = _blocking(need)
            except BaseException as err:  # the step's own `try` sees it, as if it had called
                error = err
            try:
                need = self.steps.send(answer) if error is None else self.steps.throw(error)
            except StopIteration as finished:
                return "done", finished.value
            if _awaits(need):
                return "need", need


async def _hop(run: _Blocking, offload: Offloader) -> tuple[str, Any, bool]:
    """`run` in the offloader, waited for to its end even when this task is cancelled
    meanwhile (a worker cannot be stopped, and the steps are its own until it returns):
    its answer, and whether a cancellation came."""
    work: Work = run.need.work if isinstance(run.need, Offload) else "model"
    in_context = partial(
        contextvars.copy_context().run, run
    )  # what the steps read (a request's id)
    future = asyncio.ensure_future(offload(Offload(in_context, work)))
    cancelled = False
    while True:
        try:
            ran, value = await asyncio.shield(future)
            return ran, value, cancelled
        except asyncio.CancelledError:
            if future.done():
                raise  # the worker's own run was cancelled (a pool shut down)
            cancelled = True


def in_pool(pool: Executor | None) -> Offloader:
    """An `Offloader` running blocking work in `pool` (None: the loop's default pool)."""

    async def offload(need: Offload) -> Any:
        return await asyncio.get_running_loop().run_in_executor(pool, need.call)

    return offload


def drive_on_loop(steps: Steps[T]) -> T:
    """The async driver run to completion on a loop of its own, blocking work in threads:
    what `DRIVER` is set to for the session tests' second run."""
    return asyncio.run(drive_async(steps, in_pool(None)))


Driver = Callable[[Steps[Any]], Any]
DRIVER: ContextVar[Driver] = ContextVar("cgraph_driver", default=drive)
"""The driver a blocking call of the library API (`Session.send`) runs its steps with:
`drive`. A test seam: the session and engine tests run again with `drive_on_loop`, so
every one of them passes through both drivers."""
