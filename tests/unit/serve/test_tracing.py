"""A served turn's spans, caught with the OpenTelemetry SDK's in-memory exporter: the turn,
a step per decision with its exit, score and reason, the model call under its step."""

from __future__ import annotations

from pathlib import Path

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from cgraph.errors import CgraphError
from cgraph.serve.options import ServeOptions
from cgraph.serve.service import Service
from cgraph.serve.tracing import Tracing
from cgraph.serve.watch import Watch
from cgraph.session import Event, Turn
from tests.conftest import GRAPHS

SCRIPT = """\
welcome_patient: {exit: medication_adherence_check, reason: the patient is ready}
medication_adherence_check: {exit: stay, reason: it asks, reply: "Did you take them?"}
"""


def served(
    folder: Path, *, content: bool, script: str = SCRIPT
) -> tuple[Service, InMemorySpanExporter]:
    (folder / "script.yaml").write_text(script)
    options = ServeOptions(
        graphs=(str(GRAPHS / "medical_checkin.yaml"),),
        store=str(folder / "store"),
        memory="off",
        model=f"scripted:{folder / 'script.yaml'}",
    )
    caught = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(caught))
    service = Service(options)
    service.watch = Watch(parts=(Tracing(provider, content=content),))
    return service, caught


def by_name(spans: tuple[ReadableSpan, ...]) -> dict[str, ReadableSpan]:
    return {s.name: s for s in spans}


@pytest.mark.parametrize("content", [False, True])
def test_a_turn_span_holds_its_steps_and_the_model_call_of_each(
    tmp_path: Path, content: bool
) -> None:
    service, caught = served(tmp_path, content=content)
    sid = service.create("ann", "medical_checkin", None)["session"]
    service.send("ann", sid, "Hi, I am ready", None)
    spans = by_name(caught.get_finished_spans())
    assert set(spans) == {
        "cgraph.turn",
        "cgraph.step START",
        "cgraph.step welcome_patient",
        "cgraph.step medication_adherence_check",
        f"chat scripted:{tmp_path / 'script.yaml'}",
    }
    turn = spans["cgraph.turn"]
    assert turn.parent is None and turn.attributes is not None
    assert dict(turn.attributes) == {
        "cgraph.graph": "medical_checkin",
        "cgraph.session": sid,
        "enduser.id": "ann",
        "cgraph.outcome": "moved",
        "cgraph.turn": 1,
        "cgraph.state": "medication_adherence_check",
        "cgraph.path": ("welcome_patient", "medication_adherence_check"),
        "cgraph.completed": False,
        "cgraph.fallback": False,
        "cgraph.model_calls": 2,
    }
    step = spans["cgraph.step welcome_patient"]
    assert step.parent is not None and step.parent.span_id == turn.context.span_id
    assert step.attributes is not None
    assert (step.attributes["cgraph.exit"], step.attributes["cgraph.reason"]) == (
        "medication_adherence_check",
        "the patient is ready",
    )
    assert step.attributes["cgraph.kind"] == "action"
    calls = [s for s in caught.get_finished_spans() if s.name.startswith("chat scripted:")]
    assert [c.attributes["cgraph.state"] for c in calls if c.attributes] == [
        "welcome_patient",
        "medication_adherence_check",
    ]
    for call in calls:
        assert call.attributes is not None and call.parent is not None
        mine = spans[f"cgraph.step {call.attributes['cgraph.state']!s}"]
        assert call.parent.span_id == mine.context.span_id
        assert turn.start_time is not None and call.start_time is not None
        assert turn.start_time <= call.start_time
        assert ("gen_ai.prompt" in call.attributes) == content
    if content:
        assert calls[0].attributes is not None
        assert "the patient is ready" in str(calls[0].attributes["gen_ai.completion"])


def test_a_failed_turn_is_an_error_span(tmp_path: Path) -> None:
    service, caught = served(tmp_path, content=False, script="{}\n")  # no answer: it fails
    sid = service.create("ann", "medical_checkin", None)["session"]
    with pytest.raises(CgraphError):
        service.send("ann", sid, "Hi, I am ready", None)
    turn = by_name(caught.get_finished_spans())["cgraph.turn"]
    assert turn.status.status_code is StatusCode.ERROR and turn.status.description == "ScriptError"
    assert turn.attributes is not None and turn.attributes["cgraph.outcome"] == "error"
    assert [e.name for e in turn.events] == ["exception"]


def test_tool_calls_and_recalls_are_spans_of_the_step_they_ran_in() -> None:
    caught = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(caught))
    at = 1_800_000_000.0

    def event(seq: int, name: str, when: float, **data: object) -> Event:
        return Event(seq=seq, session="s", turn=1, kind=name, at=at + when, data=data)

    events = [
        event(0, "user_message", 0.0, text="hi"),
        event(1, "recall", 0.1, state="ask", memories=[{"id": "m", "score": 0.8}]),
        event(2, "tool_call", 0.5, state="ask", tool="lookup", status="started"),
        event(3, "tool_call", 0.7, state="ask", tool="lookup", status="done", duration=0.2),
        event(4, "tool_call", 0.8, state="ask", tool="book", status="failed", duration=0.05),
        event(5, "decision", 1.0, state="ask", kind="action", chosen="stay", reason="r"),
    ]
    turn = Turn(session="s", number=1, user="hi", reply="ok", path=(), transitions=(), state="ask")
    Tracing(provider).spans(
        turn, events, [], start=int(at * 1e9), end=int((at + 1.1) * 1e9), graph="g", session="s",
        user="u",
    )  # fmt: skip
    spans = by_name(caught.get_finished_spans())
    step = spans["cgraph.step ask"]
    assert {
        n for n, s in spans.items() if s.parent and s.parent.span_id == step.context.span_id
    } == {
        "cgraph.recall",
        "cgraph.tool lookup",
        "cgraph.tool book",
    }
    lookup, book = spans["cgraph.tool lookup"], spans["cgraph.tool book"]
    assert lookup.end_time is not None and lookup.start_time is not None
    assert lookup.end_time - lookup.start_time == 200_000_000  # its duration, ending when logged
    assert lookup.status.status_code is StatusCode.UNSET
    assert book.status.status_code is StatusCode.ERROR
    assert spans["cgraph.recall"].attributes == {"cgraph.recalled": 1, "cgraph.top_score": 0.8}


def test_the_memory_extraction_after_the_reply_is_a_span_of_the_turn_and_its_own_series(
    tmp_path: Path,
) -> None:
    from prometheus_client.parser import text_string_to_metric_families

    from cgraph.serve.metrics import Metrics
    from tests.unit.runtime._runtime import FakeMemory

    remembered = "extract: {memories: [{tier: personal, text: I take my pills at night}]}\n"
    service, caught = served(tmp_path, content=False, script=SCRIPT + remembered)
    metrics = Metrics()
    service.watch = Watch(metrics, parts=service.watch.parts)
    service.memories["medical_checkin"] = memory = FakeMemory()
    sid = service.create("ann", "medical_checkin", None)["session"]
    service.send("ann", sid, "Hi, I am ready", None)
    assert [m.text for m in memory.added] == ["I take my pills at night"]  # type: ignore[attr-defined]
    spans = caught.get_finished_spans()
    turn, extraction = by_name(spans)["cgraph.turn"], by_name(spans)["cgraph.extraction"]
    assert extraction.parent is not None and extraction.parent.span_id == turn.context.span_id
    assert extraction.attributes is not None
    assert dict(extraction.attributes) == {"cgraph.model_calls": 1, "cgraph.memories_stored": 1}
    (asked,) = [s for s in spans if s.parent and s.parent.span_id == extraction.context.span_id]
    assert asked.attributes is not None and asked.attributes["cgraph.purpose"] == "extraction"
    steps = [s for s in spans if s.name.startswith("chat ") and s is not asked]
    assert {s.attributes["cgraph.purpose"] for s in steps if s.attributes} == {"turn"}
    found = {
        (s.name, s.labels.get("purpose")): s.value
        for family in text_string_to_metric_families(metrics.text().decode())
        for s in family.samples
        if s.name in ("cgraph_model_calls_total", "cgraph_model_call_seconds_count")
    }
    assert found == {
        ("cgraph_model_calls_total", "turn"): 2,
        ("cgraph_model_calls_total", "extraction"): 1,
        ("cgraph_model_call_seconds_count", "turn"): 2,
        ("cgraph_model_call_seconds_count", "extraction"): 1,
    }


def test_a_history_summary_is_a_model_call_of_its_step_and_its_own_series(
    tmp_path: Path,
) -> None:
    from prometheus_client.parser import text_string_to_metric_families

    from cgraph.serve.metrics import Metrics
    from tests.unit.runtime.test_history import FILLER, NAME, chat_graph

    (tmp_path / "script.yaml").write_text(
        "a: {exit: stay, reason: it listens, reply: noted}\nsummary: {summary: The user is Ada.}\n"
    )
    options = ServeOptions(
        graphs=(str(chat_graph(tmp_path, "summarize", tokens=100)),),
        store=str(tmp_path / "store"),
        memory="off",
        model=f"scripted:{tmp_path / 'script.yaml'}",
    )
    caught, made = InMemorySpanExporter(), TracerProvider()
    made.add_span_processor(SimpleSpanProcessor(caught))
    service, metrics = Service(options), Metrics()
    service.watch = Watch(metrics, parts=(Tracing(made),))
    sid = service.create("ann", "g", None)["session"]
    for text in (NAME, *FILLER * 3):
        service.send("ann", sid, text, None)
    spans = caught.get_finished_spans()
    summaries = [
        s for s in spans if s.attributes and s.attributes.get("cgraph.purpose") == "summary"
    ]
    assert summaries, "no summary was asked"
    steps = {s.context.span_id: s for s in spans if s.name.startswith("cgraph.step ")}
    assert all(s.parent is not None and s.parent.span_id in steps for s in summaries)
    assert all(s.attributes and s.attributes["cgraph.request_kind"] == "summary" for s in summaries)
    counted = {
        s.labels["purpose"]: s.value
        for family in text_string_to_metric_families(metrics.text().decode())
        for s in family.samples
        if s.name == "cgraph_model_calls_total"
    }
    assert counted == {"turn": 1 + 3 * len(FILLER), "summary": len(summaries)}
