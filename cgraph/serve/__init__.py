"""`cgraph serve`: graphs behind an HTTP API (Starlette on uvicorn), as thin as the CLI.

`options` (what `cgraph serve` was asked) → `graphs` (linted at start) → `service` (each
endpoint as calls of `Session`) → `app` (routes, the gate every request passes, the one
error table in `problems`, limits in `limits`) → `main` (uvicorn, workers). Starlette and
uvicorn are imported only here, and this package only by `cgraph serve`.
"""
