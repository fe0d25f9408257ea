"""The reporting parts an app's options ask for (`cgraph.serve.watch`): the log always,
`/metrics` unless `--no-metrics`, traces when the `OTEL_*` variables configure them,
webhooks for each `--webhook`, sent from `store`'s outbox."""

from __future__ import annotations

from cgraph.serve.metrics import Metrics
from cgraph.serve.options import ServeOptions
from cgraph.serve.tracing import from_environment
from cgraph.serve.watch import Part, Watch
from cgraph.serve.webhooks import open_webhooks
from cgraph.wiring.stores import SessionStore


def reporting(options: ServeOptions, store: SessionStore) -> Watch:
    parts: list[Part] = []
    traced = from_environment(options.trace_content)
    if traced is not None:
        parts.append(traced)
    hooks = open_webhooks(store, options.webhooks)
    if hooks is not None:
        parts.append(hooks)
    counted = Metrics() if options.metrics else None
    return Watch(counted, tuple(parts), content=options.log_content, webhooks=hooks)
