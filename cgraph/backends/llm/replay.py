"""Record every exchange with a model, and play a recording back deterministically.

`RecordingModel` wraps any `ChatModel` (`cgraph run --record FILE`) and appends one JSON
line per call: the request's kind, state, schema and rendered messages, and the raw
answer (or the error). `ReplayModel` (`--model replay:FILE`) answers the same calls from
that file, in order, so a session once run against a real provider becomes a
reproducible test.

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
from pathlib import Path
from typing import Any, NoReturn

from cgraph.backends.llm.registry import SEMANTIC
from cgraph.errors import ConfigError, LLMError
from cgraph.runtime.ports import ChatModel, LLMRequest, begin_turn, notices

COMPARED = ("kind", "state", "schema_name", "schema", "messages", "tools")
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


class RecordingModel:
    """Delegates to `inner` and appends every exchange to a JSONL file."""

    def __init__(self, inner: ChatModel, path: str | Path) -> None:
        self.inner = inner
        self.name = inner.name
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()

    @property
    def writes_summaries(self) -> bool:
        return bool(getattr(self.inner, "writes_summaries", True))

    @property
    def offline(self) -> bool:
        return bool(getattr(self.inner, "offline", False))

    # What the wrapped model says and keeps per turn passes through: recording must not
    # hide a structured-output mode the server refused, nor start no turn's deadline.
    def begin_turn(self) -> None:
        begin_turn(self.inner)

    def notices(self) -> list[str]:
        return list(notices(self.inner))

    def complete(self, request: LLMRequest) -> str:
        entry = {**exchange_of(request), "model": self.inner.name}
        try:
            answer = self.inner.complete(request)
        except LLMError as err:
            self._append({**entry, "error": err.message})
            raise
        self._append({**entry, "answer": answer})
        return answer

    def _append(self, entry: dict[str, Any]) -> None:
        line = json.dumps(entry, ensure_ascii=False, sort_keys=True) + "\n"
        with self._lock, self.path.open("a", encoding="utf-8") as out:
            out.write(line)


class ReplayModel:
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
    def writes_summaries(self) -> bool:
        """As the recorded model did: summaries it wrote are replayed, else extracted again."""
        return any(entry["kind"] == "summary" for entry in self.entries)

    @property
    def offline(self) -> bool:
        """As the recorded model was: the offline mode, which reads messages itself."""
        return any(entry.get("model") == SEMANTIC for entry in self.entries)

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
        difference = compare(expected, exchange_of(request))
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


def compare(expected: dict[str, Any], actual: dict[str, Any]) -> str:
    """A diff of the first compared field that differs, or "" when they match."""
    for key in COMPARED:
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
