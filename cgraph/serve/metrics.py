"""`GET /metrics`: the server's counters in the Prometheus text format (`prometheus-client`),
one registry per app. Everything is counted from what a request answered and what a turn
returned (`cgraph.serve.watch`), and from the model calls the library reports
(`cgraph.observe`): the runtime is not instrumented.

With `--workers N` the workers count into one folder (prometheus-client's multiprocess
mode) and every scrape, whichever worker answers it, shows their sum.
"""

from __future__ import annotations

import os
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest

from cgraph.observe import ModelCall
from cgraph.session import Turn
from cgraph.spec.names import START

CONTENT_TYPE = CONTENT_TYPE_LATEST
TURN_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)
WAIT_BUCKETS = (0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 2.5, 5, 10)


def outcome(turn: Turn | None) -> str:
    """What a turn came to, as one label: error (it raised), fallback (the model failed and
    the graph's fallback answered), guard (a loop guard stopped or routed it), clarified
    (it asked which exit was meant), moved (it took an exit; entering the graph's first
    state is none) or stayed."""
    if turn is None:
        return "error"
    if turn.fallback:
        return "fallback"
    if turn.guard:
        return "guard"
    if turn.clarified:
        return "clarified"
    moved = any(t.from_state != START for t in turn.transitions)
    return "moved" if moved else "stayed"


class Metrics:
    """The counters of one app."""

    def __init__(self) -> None:
        self._children: dict[tuple[Any, ...], Any] = {}
        self.registry = registry = CollectorRegistry(auto_describe=True)
        self.turns = Counter(
            "cgraph_turns", "Turns by graph and outcome", ["graph", "outcome"], registry=registry
        )
        self.turn_seconds = Histogram(
            "cgraph_turn_seconds",
            "Turn latency (lock wait excluded)",
            ["graph"],
            buckets=TURN_BUCKETS,
            registry=registry,
        )
        self.in_flight = Gauge(
            "cgraph_turns_in_flight",
            "Turns running now",
            registry=registry,
            multiprocess_mode="livesum",  # with --workers N: the live workers' sum
        )
        self.model_calls = Counter(
            "cgraph_model_calls",
            "Model calls by model, purpose (turn, extraction, summary) and result (ok, error)",
            ["model", "purpose", "result"],
            registry=registry,
        )
        self.model_seconds = Histogram(
            "cgraph_model_call_seconds",
            "Model call latency by model and purpose, retries included",
            ["model", "purpose"],
            buckets=TURN_BUCKETS,
            registry=registry,
        )
        self.tokens = Counter(
            "cgraph_model_tokens",
            "Tokens by model, purpose and kind (prompt, completion), as the provider counted them",
            ["model", "purpose", "kind"],
            registry=registry,
        )
        self.tool_calls = Counter(
            "cgraph_tool_calls",
            "Tool calls by tool and result (done, failed, refused, …)",
            ["tool", "result"],
            registry=registry,
        )
        self.lock_wait = Histogram(
            "cgraph_session_lock_wait_seconds",
            "Time a request waited for its session's lock",
            buckets=WAIT_BUCKETS,
            registry=registry,
        )
        self.busy = Counter(
            "cgraph_session_busy",
            "Requests refused 409: the session stayed busy",
            registry=registry,
        )
        self.requests = Counter(
            "cgraph_http_requests",
            "HTTP requests by method, route and status",
            ["method", "route", "status"],
            registry=registry,
        )
        self.request_seconds = Histogram(
            "cgraph_http_request_seconds",
            "HTTP request latency by route (a stream: until its response starts)",
            ["route"],
            buckets=TURN_BUCKETS,
            registry=registry,
        )
        self.started = Counter(
            "cgraph_sessions_started", "Sessions started by graph", ["graph"], registry=registry
        )
        self.completed = Counter(
            "cgraph_sessions_completed", "Sessions that reached END", ["graph"], registry=registry
        )

    def _of(self, metric: Any, *labels: str) -> Any:
        """`metric.labels(*labels)`, kept: a lookup here is a third of what `labels` costs."""
        key = (id(metric), *labels)
        child = self._children.get(key)
        if child is None:
            child = self._children[key] = metric.labels(*labels)
        return child

    def request(self, method: str, route: str, status: int, seconds: float) -> None:
        self._of(self.requests, method, route, str(status)).inc()
        self._of(self.request_seconds, route).observe(seconds)

    def turn(self, graph: str, turn: Turn | None, seconds: float) -> None:
        self._of(self.turns, graph, outcome(turn)).inc()
        self._of(self.turn_seconds, graph).observe(seconds)
        if turn is None:
            return
        if turn.completed:
            self._of(self.completed, graph).inc()
        for call in (*turn.tool_calls, *turn.effects):
            tool, status = str(call.get("tool", "")), str(call.get("status", ""))
            self._of(self.tool_calls, tool, status).inc()

    def session_started(self, graph: str) -> None:
        self._of(self.started, graph).inc()

    def model_call(self, call: ModelCall) -> None:
        """A call, by what it was for: a turn's step, the memory extraction after the reply,
        or a history summary (`ModelCall.purpose`)."""
        model, purpose = call.model, call.purpose
        self._of(self.model_calls, model, purpose, "error" if call.error else "ok").inc()
        self._of(self.model_seconds, model, purpose).observe(call.seconds)
        if call.prompt_tokens:
            self._of(self.tokens, model, purpose, "prompt").inc(call.prompt_tokens)
        if call.completion_tokens:
            self._of(self.tokens, model, purpose, "completion").inc(call.completion_tokens)

    def waited(self, seconds: float, busy: bool) -> None:
        self.lock_wait.observe(seconds)
        if busy:
            self.busy.inc()

    def text(self) -> bytes:
        """The exposition; with `--workers N`, of every worker (prometheus-client's
        multiprocess mode, which `PROMETHEUS_MULTIPROC_DIR` turns on in each worker)."""
        if not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
            return generate_latest(self.registry)
        from prometheus_client.multiprocess import MultiProcessCollector

        summed = CollectorRegistry()
        MultiProcessCollector(summed)  # type: ignore[no-untyped-call]
        return generate_latest(summed)
