"""OpenTelemetry traces: a span per HTTP request, and under it a span per turn whose
children say why the turn went where it went — a step per decision (state, kind, chosen
exit, score, reason code), a model call (model, mode, tokens, retries; prompt and answer
only with `--trace-content`), a tool call, a recall, and the memory extraction once the
reply was committed (`cgraph.extraction`, its model calls under it; its own root when it
ran after the turn, as `cgraph run` asks it in the background).

The turn's spans are built once it returned, from the `Turn`, its logged events (each
stamped with its time) and the model calls the library reported: the runtime is not
instrumented. Off unless the standard `OTEL_*` variables configure an exporter
(`OTEL_TRACES_EXPORTER=otlp|console`, or an `OTEL_EXPORTER_OTLP_…ENDPOINT`);
`cgraph run --trace FILE` writes the same spans as JSON lines.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from opentelemetry import propagate, trace
from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    SimpleSpanProcessor,
    SpanExporter,
    SpanExportResult,
)
from opentelemetry.trace import INVALID_SPAN, Span, SpanKind, Status, StatusCode, Tracer

from cgraph.errors import ConfigError
from cgraph.observe import ModelCall
from cgraph.serve.metrics import outcome
from cgraph.session import Event, Session, Turn

if TYPE_CHECKING:
    from starlette.requests import Request

    from cgraph.serve.watch import Answered, Seen

NS = 1_000_000_000


def configured() -> str | None:
    """The exporter the `OTEL_*` variables ask for (`otlp`, `console`), or None: off."""
    if os.environ.get("OTEL_SDK_DISABLED", "").lower() == "true":
        return None
    named = os.environ.get("OTEL_TRACES_EXPORTER", "").strip().lower()
    if named in ("none", ""):
        endpoint = any(
            os.environ.get(v)
            for v in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        )
        return "otlp" if endpoint and named != "none" else None
    if named not in ("otlp", "console"):
        raise ConfigError(f"OTEL_TRACES_EXPORTER={named}: cgraph exports `otlp` or `console`")
    protocol = os.environ.get(
        "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", os.environ.get("OTEL_EXPORTER_OTLP_PROTOCOL", "")
    )
    if named == "otlp" and protocol not in ("", "http/protobuf"):
        raise ConfigError(f"OTEL_EXPORTER_OTLP_PROTOCOL={protocol}: cgraph sends http/protobuf")
    return named


def provider(exporter: SpanExporter, *, batch: bool = True) -> TracerProvider:
    """A tracer provider exporting to `exporter`; the service is `cgraph` unless
    `OTEL_SERVICE_NAME` (or `OTEL_RESOURCE_ATTRIBUTES`) names it."""
    resource = Resource.create()
    if str(resource.attributes.get(SERVICE_NAME, "")).startswith("unknown_service"):
        resource = resource.merge(Resource({SERVICE_NAME: "cgraph"}))
    made = TracerProvider(resource=resource)
    made.add_span_processor(
        BatchSpanProcessor(exporter) if batch else SimpleSpanProcessor(exporter)
    )
    return made


def from_environment(content: bool) -> Tracing | None:
    """Tracing as the `OTEL_*` variables configure it, or None."""
    named = configured()
    if named is None:
        return None
    if named == "console":
        from opentelemetry.sdk.trace.export import ConsoleSpanExporter

        return Tracing(provider(ConsoleSpanExporter()), content=content)
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    return Tracing(provider(OTLPSpanExporter()), content=content)


class JsonLines(SpanExporter):
    """Spans as JSON lines (`cgraph run --trace FILE`), one object a span."""

    def __init__(self, out: IO[str]) -> None:
        self.out = out

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        for span in spans:
            self.out.write(json.dumps(as_json(span), ensure_ascii=False) + "\n")
        self.out.flush()
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        self.out.close()


def as_json(span: ReadableSpan) -> dict[str, Any]:
    """A span as one JSON object: its name, ids (hex), times (unix ns), attributes, status."""
    context, parent = span.get_span_context(), span.parent
    return {
        "name": span.name,
        "trace_id": f"{context.trace_id:032x}" if context else None,
        "span_id": f"{context.span_id:016x}" if context else None,
        "parent_id": f"{parent.span_id:016x}" if parent else None,
        "start": span.start_time,
        "end": span.end_time,
        "attributes": dict(span.attributes or {}),
        "status": span.status.status_code.name.lower(),
    }


def to_file(path: Path, content: bool) -> Tracing:
    try:
        out = path.open("a", encoding="utf-8")
    except OSError as err:
        raise ConfigError(f"--trace {path}: cannot write it ({err.strerror})") from err
    return Tracing(provider(JsonLines(out), batch=False), content=content)


@dataclass(frozen=True, slots=True)
class Window:
    """A step's span and the time it covers (a model call or a tool call in it is its)."""

    span: Span
    state: str
    start: int
    end: int


class Tracing:
    """The spans of one app (or one `cgraph run`)."""

    def __init__(self, made: TracerProvider, *, content: bool = False) -> None:
        self.provider, self.content = made, content
        self.tracer = made.get_tracer("cgraph")

    def close(self) -> None:
        """Export what is left (at the end of a run, or when the server stops)."""
        self.provider.shutdown()

    # ----- the parts' interface (`cgraph.serve.watch.Part`) -----------------------------

    @contextmanager
    def request(self, request: Request, answered: Answered) -> Iterator[None]:
        """The request's span, continuing the client's trace (`traceparent`) if it sent one."""
        parent = propagate.extract(dict(request.headers))
        with self.tracer.start_as_current_span(
            f"{answered.method} {answered.route}",
            context=parent,
            kind=SpanKind.SERVER,
            attributes={
                "http.request.method": answered.method,
                "http.route": answered.route,
                "url.path": request.url.path,
            },
        ) as span:
            yield
            span.set_attribute("http.response.status_code", answered.status)
            if answered.user:
                span.set_attribute("enduser.id", answered.user)
            if answered.status >= 500:
                span.set_status(Status(StatusCode.ERROR, answered.error_id or ""))

    def started(self, graph: str, session: str, user: str) -> None:
        """Nothing: a session's start is its request's span."""

    def turn(self, seen: Seen) -> None:
        start = int(seen.started * NS)
        self.spans(
            seen.turn,
            seen.events(),
            seen.calls,
            start=start,
            end=start + int(seen.seconds * NS),
            graph=seen.graph,
            session=seen.session,
            user=seen.user,
            error=seen.error,
        )

    def session_spans(self, session: Session, after: int, calls: Sequence[ModelCall]) -> None:
        """The spans of `session`'s turns numbered above `after` (a `cgraph run`), each
        from its first event to its last, with the model calls made in that time; a memory
        extraction asked in the background after a turn is a root span of its own."""
        placed: set[int] = set()
        began: list[tuple[int, int]] = []
        for turn in session.log.turns():
            if turn.number <= after:
                continue
            events = session.log.turn_events(turn.number)
            if not events:
                continue
            # The turn ends at its last event but the extraction's, asked once the reply
            # was shown (its answer is logged whenever it came).
            own = [e for e in events if not _closes_extraction(e)] or events
            start, end = int(events[0].at * NS), int(own[-1].at * NS)
            made = [c for c in calls if start <= int(c.started * NS) <= end]
            placed.update(id(c) for c in made)
            began.append((turn.number, start))
            self.spans(
                turn,
                own,
                made,
                start=start,
                end=end,
                graph=session.graph.name,
                session=session.id,
                user=session.user_id,
            )
        for call in calls:
            if call.purpose != "extraction" or id(call) in placed:
                continue
            at = int(call.started * NS)
            followed = max((n for n, start in began if start <= at), default=None)
            if followed is not None:  # its answer is logged in its turn's or the next's events
                logged = [
                    *session.log.turn_events(followed),
                    *session.log.turn_events(followed + 1),
                ]
                closing = [e for e in logged if e.data.get("turn", e.turn) == followed]
                self.extraction([call], closing, turn=followed)

    # ----- a turn's spans ---------------------------------------------------------------

    def spans(
        self,
        turn: Turn | None,
        events: list[Event],
        calls: Sequence[ModelCall],
        *,
        start: int,
        end: int,
        graph: str,
        session: str,
        user: str,
        error: BaseException | None = None,
    ) -> None:
        """The turn's span (under the current span, if any) and its children."""
        attributes: dict[str, Any] = {
            "cgraph.graph": graph,
            "cgraph.session": session,
            "enduser.id": user,
            "cgraph.outcome": outcome(turn),
        }
        if turn is not None:
            attributes.update(_turn_attributes(turn))
        span = self.tracer.start_span("cgraph.turn", start_time=start, attributes=attributes)
        if error is not None:
            span.set_status(Status(StatusCode.ERROR, type(error).__name__))
            span.record_exception(error, timestamp=end)
        context = trace.set_span_in_context(span)
        windows = self._steps(events, context, start)
        for call in calls:
            if call.purpose != "extraction":
                window = _window_of(windows, int(call.started * NS), call.state)
                self._model_call(
                    call, trace.set_span_in_context(window.span) if window else context
                )
        extracting = [c for c in calls if c.purpose == "extraction"]
        if extracting:
            self.extraction(extracting, events, context)
        for event in events:
            if event.kind == "tool_call":
                _tool_call(self.tracer, event, windows, context)
            elif event.kind == "recall":
                _recall(self.tracer, event, windows, context)
        for window in windows:
            window.span.end(end_time=window.end)
        span.end(end_time=max(end, *(w.end for w in windows)) if windows else end)

    def _steps(self, events: list[Event], context: Any, start: int) -> list[Window]:
        """A span per decision, from the end of the step before to the decision's time."""
        windows, since = [], start
        for event in events:
            if event.kind != "decision":
                continue
            at = max(since, int(event.at * NS))
            data = event.data
            why = data.get("why") if isinstance(data.get("why"), dict) else {}
            chosen, state = str(data.get("chosen", "")), str(data.get("state", ""))
            attributes: dict[str, Any] = {
                "cgraph.state": state,
                "cgraph.kind": str(data.get("kind", "")),
                "cgraph.exit": chosen,
                "cgraph.reason": str(data.get("reason", "")),
                "cgraph.reason_code": str((why or {}).get("kind", "")),
                "cgraph.candidates": [str(c) for c in data.get("candidates", ())],
                "cgraph.fallback": bool(data.get("fallback", False)),
                "cgraph.attempts": int(data.get("attempts", 0)),
            }
            score = (data.get("scores") or {}).get(chosen)
            if isinstance(score, int | float):
                attributes["cgraph.score"] = float(score)
            if data.get("model"):
                attributes["cgraph.model"] = str(data["model"])
            name = f"cgraph.step {state}"
            span = self.tracer.start_span(
                name, context=context, start_time=since, attributes=attributes
            )
            windows.append(Window(span, state, since, at))
            since = at
        return windows

    def extraction(
        self,
        calls: Sequence[ModelCall],
        events: Sequence[Event],
        context: Any = None,
        turn: int | None = None,
    ) -> None:
        """The memory extraction's span, its model calls under it: a child of `context`
        (the turn whose request ran it), else a root of its own (`turn`: the turn it
        followed). The event that closed it, among `events`, says what it stored."""
        start = int(min(c.started for c in calls) * NS)
        end = max(int((c.started + c.seconds) * NS) for c in calls)
        attributes: dict[str, Any] = {"cgraph.model_calls": sum(c.attempts for c in calls)}
        if turn is not None:
            attributes["cgraph.turn"] = turn
        closing = next((e for e in reversed(events) if _closes_extraction(e)), None)
        if closing is not None and closing.kind == "memory_stored":
            attributes["cgraph.memories_stored"] = len(closing.data.get("memories") or ())
        if closing is not None:
            end = max(end, int(closing.at * NS))
        failed = next((c.error for c in calls if c.error), None)
        if closing is not None and closing.kind == "memory_error":
            failed = str(closing.data.get("error", "")) or failed
        span = self.tracer.start_span(
            "cgraph.extraction",
            context=context if context is not None else trace.set_span_in_context(INVALID_SPAN),
            start_time=start,
            attributes=attributes,
        )
        if failed:
            span.set_status(Status(StatusCode.ERROR, failed))
        inside = trace.set_span_in_context(span)
        for call in calls:
            self._model_call(call, inside)
        span.end(end_time=end)

    def _model_call(self, call: ModelCall, parent: Any) -> None:
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": call.model,
            "cgraph.purpose": call.purpose,
            "cgraph.request_kind": call.kind,
            "cgraph.state": call.state,
            "cgraph.mode": call.mode,
            "cgraph.streamed": call.streamed,
            "cgraph.retries": max(0, call.attempts - 1),
        }
        if call.prompt_tokens is not None:
            attributes["gen_ai.usage.input_tokens"] = call.prompt_tokens
        if call.completion_tokens is not None:
            attributes["gen_ai.usage.output_tokens"] = call.completion_tokens
        if self.content:
            attributes["gen_ai.prompt"] = json.dumps(list(call.messages), ensure_ascii=False)
            if call.reply is not None:
                attributes["gen_ai.completion"] = call.reply
        start = int(call.started * NS)
        span = self.tracer.start_span(
            f"chat {call.model}", context=parent, start_time=start, attributes=attributes
        )
        if call.error:
            span.set_status(Status(StatusCode.ERROR, call.error))
        span.end(end_time=start + int(call.seconds * NS))


def _tool_call(tracer: Tracer, event: Event, windows: list[Window], context: Any) -> None:
    data, end = event.data, int(event.at * NS)
    if data.get("status") in ("started", "skipped"):  # an intent, or a note: no call
        return
    start = end - int(float(data.get("duration", 0) or 0) * NS)
    window = _window_of(windows, start, str(data.get("state", "")))
    name = str(data.get("tool", data.get("name", "")))
    attributes = {"cgraph.tool": name, "cgraph.status": str(data.get("status", ""))}
    if data.get("error"):
        attributes["cgraph.error"] = str(data["error"])
    parent = trace.set_span_in_context(window.span) if window else context
    span = tracer.start_span(
        f"cgraph.tool {name}", context=parent, start_time=start, attributes=attributes
    )
    if data.get("status") != "done":
        span.set_status(Status(StatusCode.ERROR, str(data.get("status", ""))))
    span.end(end_time=end)


def _recall(tracer: Tracer, event: Event, windows: list[Window], context: Any) -> None:
    data, at = event.data, int(event.at * NS)
    found = data.get("memories") or []
    scores = [m.get("score") for m in found if isinstance(m, dict)]
    attributes: dict[str, Any] = {"cgraph.recalled": len(found)}
    if any(isinstance(s, int | float) for s in scores):
        attributes["cgraph.top_score"] = max(float(s) for s in scores if s is not None)
    window = _window_of(windows, at, str(data.get("state", "")))
    parent = trace.set_span_in_context(window.span) if window else context
    span = tracer.start_span("cgraph.recall", context=parent, start_time=at, attributes=attributes)
    span.end(end_time=at)


def _turn_attributes(turn: Turn) -> dict[str, Any]:
    found: dict[str, Any] = {
        "cgraph.turn": turn.number,
        "cgraph.state": turn.state,
        "cgraph.path": list(turn.path),
        "cgraph.completed": turn.completed,
        "cgraph.fallback": turn.fallback,
        "cgraph.model_calls": turn.llm_calls,
    }
    if turn.guard:
        found["cgraph.guard"] = turn.guard
    return found


def _closes_extraction(event: Event) -> bool:
    """The event a memory extraction leaves when it ends (stored, or failed)."""
    return event.kind in ("memory_stored", "memory_error") and "calls" in event.data


def _window_of(windows: list[Window], at: int, state: str) -> Window | None:
    """The step `at` falls in, the step of `state` first."""
    inside = [w for w in windows if w.start <= at <= w.end]
    return next((w for w in inside if w.state == state), inside[0] if inside else None)
