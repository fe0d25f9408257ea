"""One exception root for cgraph, with a subclass per phase.

Every error carries a human message; located errors also carry diagnostics.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cgraph.diagnostics import Diagnostic


class CgraphError(Exception):
    """Root of every error cgraph raises on purpose."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class GraphError(CgraphError):
    """A graph file could not be loaded; `diagnostics` says where and why."""

    def __init__(self, message: str, diagnostics: Sequence[Diagnostic] = ()) -> None:
        super().__init__(message)
        self.diagnostics = tuple(diagnostics)

    def __str__(self) -> str:
        lines = [self.message, *(d.render() for d in self.diagnostics)]
        return "\n".join(lines)


class TemplateError(CgraphError):
    """A Jinja template failed to render."""


class RenderError(TemplateError):
    """A graph template failed or broke a render limit; `template` is its source text,
    `cause` the name of what went wrong (`ZeroDivisionError`, `SecurityError`, `timeout`).
    """

    def __init__(self, message: str, template: str = "", cause: str = "") -> None:
        super().__init__(message)
        self.template = template
        self.cause = cause


class ValueTooLarge(CgraphError):
    """A value to be kept (a variable, a tool result, a reply) is over the format's size
    limit (`cgraph.spec.limits.MAX_VALUE_CHARS`) or is circular; `path` leads to the
    innermost part that is still too large."""

    def __init__(self, message: str, path: tuple[object, ...] = ()) -> None:
        super().__init__(message)
        self.path = path


class SlotValueError(CgraphError):
    """A value for a slot (from `set:`) that the slot's schema refuses; never stored."""

    def __init__(self, message: str, slot: str) -> None:
        super().__init__(message)
        self.slot = slot


class InputError(CgraphError):
    """A user's message that cannot be stored (not text, a lone surrogate, a NUL, over
    `cgraph.spec.limits.MAX_MESSAGE_CHARS`); refused before anything of it is kept."""


class SessionError(CgraphError):
    """A session was used in a way its state does not allow."""


class SessionCompleted(SessionError):
    """A message was sent to a session that already reached END."""


class SessionNotFound(SessionError):
    """No session with that id is in the store."""


class NotTheOwner(SessionError):
    """The session belongs to another user than the one asking for it."""


class SessionQuota(SessionError):
    """The user already keeps as many sessions as the store allows one user; none was
    created."""


class SessionBusy(SessionError):
    """Another turn of the session is running (in this process or another) and did not end
    within the wait allowed; nothing was done."""

    @classmethod
    def of(cls, session_id: str) -> SessionBusy:
        """The one error a busy session gets, wherever its wait ran out."""
        return cls(
            f"session `{session_id}` is busy with another turn (in this process or another); "
            "try again when it is done"
        )


class TransitionError(CgraphError):
    """A transition the graph does not declare was attempted; it was not applied."""


class LLMError(CgraphError):
    """The language model failed after its retries.

    `permanent` marks a failure that asking again cannot fix (an invalid request, a
    missing key, an authentication error, an unknown provider).
    """

    def __init__(self, message: str, *, permanent: bool = False) -> None:
        super().__init__(message)
        self.permanent = permanent


class ToolError(CgraphError):
    """A declared tool failed, timed out or could not be imported."""


class MemoryStoreError(CgraphError):
    """The memory store failed; callers continue without memories."""


class StoreError(CgraphError):
    """The session store failed to read or write."""


class LeaseLost(StoreError):
    """A write was refused: the session's lease (`SessionStore.acquire`) is no longer this
    writer's (it expired and another holder took it, or it was let go). Nothing of the
    write was stored; the holder now in charge finishes or cancels the turn."""


class SessionExists(StoreError):
    """A new session was given the id of a stored one; nothing was written."""


class ConfigError(CgraphError):
    """A setting or backend name is invalid."""


class UnknownModel(ConfigError):
    """A model name no backend can place."""
