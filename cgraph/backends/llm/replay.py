"""Record every exchange with a model, and play a recording back deterministically.

`RecordingModel` wraps any `ChatModel` (`cgraph run --record FILE`) and appends one JSON
line per call: the request's kind, state, schema and rendered messages, and the raw
answer (or the error). `RecordingChooser` does the same for a chooser that reads messages
itself (the offline mode): each choice is written as a model's answer would be, with the
question it answered (its kind, state, options and the user's messages) instead of a
prompt, which that chooser never renders. `--model replay:FILE` answers the same calls
from that file, in order, so a session once run becomes a reproducible test: a
`ReplayModel` for a model's recording, a `ReplayChooser` for the offline chooser's (its
choices come back as that chooser made them, so the runtime words its staying reply as it
did then: the state's text rendered after the message's values are in, after what was
refused).

Replay is strict: the kind, the state, the schema and *every* rendered message must equal
the recorded ones. Anything that changes what the model would be shown — an edited graph
or prompt template, a different conversation, memories recalled from a different store —
is a mismatch, raised as `LLMError` with a diff of the first field that differs, and kept
in `failure` so a caller that falls back on model errors can still fail loudly. Replay
with a fresh `--store` (or the same memories) for that reason.
"""

from __future__ import annotations

import difflib
import json
import threading
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, NoReturn

from cgraph.errors import ConfigError, LLMError
from cgraph.runtime.ports import (
    Capabilities,
    ChatModel,
    Choice,
    ExitChooser,
    LLMRequest,
    Question,
    Quiet,
    Reason,
    Rememberer,
    Whole,
)
from cgraph.spec.model import Tier

COMPARED = ("kind", "state", "schema_name", "schema", "messages", "tools")
ASKED = ("kind", "state", "question")
"""What a replay compares of a recorded choice: the question, not a prompt."""
_DIFF_LINES = 40


def exchange_of(request: LLMRequest) -> dict[str, Any]:
    """What a recording keeps of a request: everything a replay compares (the functions
    offered only when there are some, so recordings made before tools still replay)."""
    offered = {"tools": [dict(t) for t in request.tools]} if request.tools else {}
    return {
        "kind": request.kind,
        "state": request.state,
        "schema_name": request.schema_name,
        "schema": request.schema,
        "messages": [dict(m) for m in request.messages],
        **offered,
    }


def question_of(question: Question) -> dict[str, Any]:
    """What a recording keeps of a question a chooser answered by reading it."""
    return {
        "options": [o.id for o in question.options],
        "allow_stay": question.allow_stay,
        "user_messages": list(question.user_messages),
        "rejected": question.rejected,
    }


class _Recorder:
    """Appends entries to a JSONL file, one writer at a time."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()

    def _append(self, entry: dict[str, Any]) -> None:
        line = json.dumps(entry, ensure_ascii=False, sort_keys=True) + "\n"
        with self._lock, self.path.open("a", encoding="utf-8") as out:
            out.write(line)


class RecordingModel(_Recorder):
    """Delegates to `inner` and appends every exchange to a JSONL file."""

    def __init__(self, inner: ChatModel, path: str | Path) -> None:
        super().__init__(path)
        self.inner = inner
        self.name = inner.name

    @property
    def capabilities(self) -> Capabilities:
        """The inner model's, but called blocking (a recording is the terminal's, where
        the blocking driver runs; the async one waits on it in a thread)."""
        return replace(self.inner.capabilities, awaits=False)

    def begin_turn(self) -> None:
        self.inner.begin_turn()

    def notices(self) -> tuple[str, ...]:
        return self.inner.notices()

    def stream(self, request: LLMRequest) -> Iterator[str | Whole]:
        entry = {**exchange_of(request), "model": self.inner.name}
        pieces: list[str] = []
        try:
            for piece in self.inner.stream(request):
                pieces.append(piece.text if isinstance(piece, Whole) else piece)
                yield piece
        except LLMError as err:
            self._append({**entry, "error": err.message})
            raise
        whole = pieces[-1] if pieces and isinstance(piece, Whole) else "".join(pieces)
        self._append({**entry, "answer": whole})

    def complete(self, request: LLMRequest) -> str:
        entry = {**exchange_of(request), "model": self.inner.name}
        try:
            answer = self.inner.complete(request)
        except LLMError as err:
            self._append({**entry, "error": err.message})
            raise
        self._append({**entry, "answer": answer})
        return answer


class RecordingChooser(_Recorder):
    """Delegates to a chooser that reads messages itself and records each choice (and
    what it picked to remember) as a model's answer would be recorded."""

    def __init__(self, inner: ExitChooser, path: str | Path) -> None:
        super().__init__(path)
        self.inner = inner
        self.name = inner.name

    def choose(self, question: Question) -> Choice:
        choice = self.inner.choose(question)
        asked = {"kind": question.kind, "state": question.state, "question": question_of(question)}
        answer = json.dumps(_choice_answer(choice, question))
        self._append({**asked, "model": self.name, "offline": True, "answer": answer})
        return choice

    def remember(self, user_messages: Sequence[str]) -> list[tuple[Tier, str]]:
        assert isinstance(self.inner, Rememberer)
        found = self.inner.remember(user_messages)
        memories = [{"tier": tier, "text": text} for tier, text in found]
        asked = {"kind": "extract", "state": "", "question": {"user_messages": list(user_messages)}}
        answer = json.dumps({"memories": memories})
        self._append({**asked, "model": self.name, "offline": True, "answer": answer})
        return found


class ReplayModel(Quiet):
    """Answers from a recording, in order; a request that differs fails loudly."""

    def __init__(self, rest: str = "", **options: Any) -> None:
        if not rest:
            raise ConfigError("replay needs a file: `--model replay:FILE`")
        self.path = Path(rest)
        self.entries = load_recording(self.path)
        self.name = f"replay:{rest}"
        self.position = 0
        self.failure: str | None = None

    @property
    def capabilities(self) -> Capabilities:
        """As the recorded model was: summaries it wrote are replayed, else extracted again;
        a recording of the offline chooser replays its choices as the offline mode's."""
        return Capabilities(
            streams=False,
            calls_tools=True,
            writes_prose=any(entry["kind"] == "summary" for entry in self.entries),
            offline=any(entry.get("offline") for entry in self.entries),
        )

    @property
    def remaining(self) -> int:
        return len(self.entries) - self.position

    def complete(self, request: LLMRequest) -> str:
        if self.failure is not None:
            raise LLMError(self.failure)
        if self.position >= len(self.entries):
            self._fail(
                f"{self.path}: the recording has {len(self.entries)} exchanges and all were "
                f"used; the session asked one more ({request.kind} in `{request.state}`)"
            )
        expected = self.entries[self.position]
        difference = compare(expected, _asked(expected, request))
        if difference:
            self._fail(
                f"{self.path}: exchange {self.position + 1} does not match the recording\n"
                + difference
            )
        self.position += 1
        if "error" in expected:
            raise LLMError(str(expected["error"]))
        return str(expected.get("answer", ""))

    def _fail(self, message: str) -> NoReturn:
        self.failure = message
        raise LLMError(message)


def _choice_answer(choice: Choice, question: Question) -> dict[str, Any]:
    """A choice as a recording keeps it: a model's answer fields (`reply` the words the
    user heard when the chooser wrote its own, else the state's as rendered for the
    question), and what only the offline chooser gives (`own_reply`, `preface`, `why`, the
    clarifying candidates), which its replay reads."""
    answer: dict[str, Any] = {"exit": choice.exit, "reason": str(choice.reason)}
    answer |= {"reply": choice.reply or question.authored_reply, "scores": choice.confidence}
    answer |= {"own_reply": choice.reply, "why": choice.reason.kind}
    if choice.preface:
        answer["preface"] = choice.preface
    if choice.note:
        answer["note"] = choice.note
    if question.slots:
        answer["slots"] = {name: choice.slots.get(name) for name in question.slots}
    if choice.slot_problems:
        answer["slot_problems"] = list(choice.slot_problems)
    if choice.candidates or choice.question:
        answer |= {"candidates": list(choice.candidates), "question": choice.question}
    return answer


def _recorded_choice(answer: dict[str, Any]) -> Choice:
    """The choice a recorded offline answer stands for (one recorded before `own_reply`
    was kept replays its `reply` as the chooser's own, as such recordings did)."""
    slots = {k: v for k, v in (answer.get("slots") or {}).items() if v is not None}
    return Choice(
        exit=str(answer["exit"]),
        reason=Reason(str(answer.get("why", "model")), str(answer.get("reason", ""))),
        confidence={str(k): float(v) for k, v in (answer.get("scores") or {}).items()},
        reply=str(answer.get("own_reply", answer.get("reply", ""))),
        preface=str(answer.get("preface", "")),
        note=str(answer.get("note", "")),
        slots=slots,
        slot_problems=tuple(answer.get("slot_problems", ())),
        candidates=tuple(answer.get("candidates", ())),
        question=str(answer.get("question", "")),
    )


class ReplayChooser:
    """Answers an offline recording's questions with the recorded choices, in order; a
    question that differs fails loudly, as `ReplayModel` does for prompts."""

    def __init__(self, path: Path, entries: list[dict[str, Any]]) -> None:
        self.path = path
        self.entries = entries
        self.name = f"replay:{path}"
        self.position = 0
        self.failure: str | None = None

    @property
    def remaining(self) -> int:
        return len(self.entries) - self.position

    def choose(self, question: Question) -> Choice:
        asked = {"kind": question.kind, "state": question.state, "question": question_of(question)}
        try:
            answer = self._next(asked, f"{question.kind} in `{question.state}`")
        except LLMError as err:
            return Choice("", Reason("failed", err.message))
        return _recorded_choice(answer)

    def remember(self, user_messages: Sequence[str]) -> list[tuple[Tier, str]]:
        asked = {"kind": "extract", "state": "", "question": {"user_messages": list(user_messages)}}
        try:
            answer = self._next(asked, "what to remember")
        except LLMError:
            return []
        return [(m["tier"], str(m["text"])) for m in answer.get("memories", ())]

    def _next(self, asked: dict[str, Any], what: str) -> dict[str, Any]:
        if self.failure is not None:
            raise LLMError(self.failure)
        if self.position >= len(self.entries):
            self._fail(
                f"{self.path}: the recording has {len(self.entries)} exchanges and all were "
                f"used; the session asked one more ({what})"
            )
        expected = self.entries[self.position]
        difference = compare(expected, asked)
        if difference:
            self._fail(
                f"{self.path}: exchange {self.position + 1} does not match the recording\n"
                + difference
            )
        self.position += 1
        try:
            answer = json.loads(str(expected.get("answer", "")))
        except json.JSONDecodeError:
            answer = None
        if not isinstance(answer, dict):
            self._fail(f"{self.path}: exchange {self.position}: the recorded answer is no object")
        return answer

    def _fail(self, message: str) -> NoReturn:
        self.failure = message
        raise LLMError(message)


def replay(rest: str = "", **options: Any) -> ReplayModel | ReplayChooser:
    """`--model replay:FILE`: the offline chooser's recording replayed as its choices, any
    other as a model's answers."""
    model = ReplayModel(rest, **options)
    if model.entries and all(entry.get("offline") for entry in model.entries):
        return ReplayChooser(model.path, model.entries)
    return model


def load_recording(path: Path) -> list[dict[str, Any]]:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as err:
        raise ConfigError(f"cannot read the recording {path}: {err.strerror}") from err
    entries = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
        except json.JSONDecodeError as err:
            raise ConfigError(f"{path}:{number}: not a JSON line ({err.msg})") from err
        if not isinstance(entry, dict) or not {"kind", "state"} <= entry.keys():
            raise ConfigError(f"{path}:{number}: not a recorded exchange")
        entries.append(entry)
    return entries


def _asked(expected: dict[str, Any], request: LLMRequest) -> dict[str, Any]:
    """What a replay compares: the prompt; for a recorded choice, the question it answered."""
    if not expected.get("offline"):
        return exchange_of(request)
    if request.kind == "extract":
        said = {"user_messages": list(request.asked.user_messages)}
        return {"kind": "extract", "state": "", "question": said}
    return {"kind": request.kind, "state": request.state, "question": question_of(request.asked)}


def compare(expected: dict[str, Any], actual: dict[str, Any]) -> str:
    """A diff of the first compared field that differs, or "" when they match."""
    for key in ASKED if expected.get("offline") else COMPARED:
        want, got = expected.get(key), actual.get(key)
        if want == got:
            continue
        diff = difflib.unified_diff(
            _lines(want), _lines(got), f"recorded {key}", f"requested {key}", lineterm=""
        )
        shown = list(diff)[:_DIFF_LINES]
        return "\n".join(shown) if shown else f"{key}: {want!r} != {got!r}"
    return ""


def _lines(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True).splitlines()


def recording(made: ChatModel | ExitChooser, path: str | Path) -> ChatModel | ExitChooser:
    """`made`, with every exchange (or choice) appended to `path`."""
    if isinstance(made, ChatModel):
        return RecordingModel(made, path)
    return RecordingChooser(made, path)
