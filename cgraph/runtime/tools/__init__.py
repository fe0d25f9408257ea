"""Tools: a declared handler loaded and called, by a side-effect state or by the model.

`load` finds and imports a handler, `invoke` calls it (in the calling thread or, for
`isolation: thread`, a thread with a timeout), `arguments` checks a call's arguments,
`calls` is the model's tool-call loop, and `runner` runs a session's calls in worker
processes: `process` is one worker seen from the session, `worker` the worker itself.

Empty on purpose: the worker process imports `cgraph.runtime.tools.worker` and what it
needs, nothing of the engine.
"""
