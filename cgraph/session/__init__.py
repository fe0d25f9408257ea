"""The library API of a running conversation: `Sessions` opens them, `Session` takes turns.

`Sessions` is bound to a store, a memory store and how models are resolved; `Session` is
one conversation's turn handle, `SessionView` what it shows at one moment, `SessionLog`
its turns and events. Besides these, what their methods return and yield, for front ends
to name.
"""

from cgraph.runtime.ask.streaming import CallingTools, Chunk, Delta, Retracted
from cgraph.runtime.ports import Announcer, Lease, SessionInfo, Standing, awaited
from cgraph.runtime.state.records import Event, Turn
from cgraph.runtime.tools.runner import ToolRunner
from cgraph.runtime.turn.after import Policy
from cgraph.session.handle import Session, Sessions
from cgraph.session.log import Recheck, SessionLog
from cgraph.session.view import SessionView

__all__ = [
    "Announcer",
    "CallingTools",
    "Chunk",
    "Delta",
    "Event",
    "Lease",
    "Policy",
    "Recheck",
    "Retracted",
    "Session",
    "SessionInfo",
    "SessionLog",
    "SessionView",
    "Sessions",
    "Standing",
    "ToolRunner",
    "Turn",
    "awaited",
]
