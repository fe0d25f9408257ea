"""Run test files: each run in a fresh in-memory session, every turn checked.

The model is resolved once per name for the whole process (the semantic model loads its
embedding model once), so a file of many cases costs little more than its turns.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from cgraph.diagnostics import Diagnostic, Severity, has_errors, shown_path
from cgraph.errors import CgraphError, GraphError
from cgraph.lint.gate import Gate, gate
from cgraph.runtime.ports import ChatModel, ExitChooser, MemoryStore, NewMemory, NullMemory
from cgraph.runtime.state.records import step_name
from cgraph.runtime.tools.runner import ToolRunner
from cgraph.session import Session, Sessions, SessionView
from cgraph.spec.limits import ReadLimits
from cgraph.spec.load import load_graph
from cgraph.spec.model import Graph
from cgraph.spec.read import read_file
from cgraph.spec.testfile import Scripted, TestFile, missing_graph
from cgraph.spec.trust import Trust
from cgraph.testing.cases import SUFFIXES, Run, expand, find_files, load, selected
from cgraph.testing.decisions import Tally, Verdict, tally, verdict
from cgraph.testing.expectations import Mismatch, check
from cgraph.testing.observed import Observed, observe, why
from cgraph.wiring.models import resolve_model


@dataclass(frozen=True, slots=True)
class TurnResult:
    """One turn of a run: what was seen, and the expectations it broke."""

    number: int
    observed: Observed
    mismatches: tuple[Mismatch, ...] = ()
    verdict: Verdict | None = None
    """As a decision (`cgraph.testing.decisions`): right, wrong or asked; None when the
    turn expected no `state` or `exits`."""

    @property
    def why(self) -> list[str]:
        return why(self.observed)


@dataclass(frozen=True, slots=True)
class RunResult:
    """One reported line: a case with one choice of phrasings."""

    file: Path
    graph: Path
    name: str
    seconds: float
    turns: tuple[TurnResult, ...]
    error: str | None = None
    """A failure that is no expectation (the model or a tool raised)."""

    @property
    def passed(self) -> bool:
        return self.error is None and not any(t.mismatches for t in self.turns)


@dataclass
class FileResult:
    """A test file's runs, or the problems that kept it from running."""

    file: Path
    graph: Path | None = None
    graph_spec: Graph | None = None
    runs: list[RunResult] = field(default_factory=list)
    problems: list[Diagnostic] = field(default_factory=list)
    skipped: int = 0
    lint: list[Diagnostic] = field(default_factory=list)
    """The tested graph's lint errors: its cases still run (they show what the errors do),
    but the run fails."""
    hints: list[Diagnostic] = field(default_factory=list)
    """The tested graph's offline hints (`no-say`, `offline-slot`) when its cases run
    without an LLM; none otherwise."""
    model: str = ""
    """The model its cases ran with (`--model`, else the file's); `scripted answers` for
    the file's own."""


@dataclass(frozen=True, slots=True)
class Options:
    """What `cgraph test` was asked, as plain data."""

    patterns: tuple[str, ...] = ()
    model: str | None = None
    stop_first: bool = False
    record: Path | None = None
    trust: Trust = field(default_factory=Trust)
    """What the tested graphs may reach besides their folders (`cgraph.spec.trust`)."""
    limits: ReadLimits = field(default_factory=ReadLimits)
    """The limits of what is read: test files, graphs, sub-graphs."""


class Runner:
    """Runs files in order; models are made once per name."""

    def __init__(self, options: Options, on_run: Callable[[RunResult], None] | None = None) -> None:
        self.options = options
        self.on_run = on_run or (lambda result: None)
        self._models: dict[str, ChatModel | ExitChooser] = {}
        self.tools = ToolRunner()
        """One tool worker for every run: the runs take turns, as tools ran in-process."""
        self.stopped = False
        self._gates: dict[Path, Gate] = {}
        """Each tested graph's lint, once per run however many files test it."""

    def run_paths(self, paths: Iterable[str | Path]) -> list[FileResult]:
        results = []
        try:
            for path in find_files(paths):
                if self.stopped:
                    break
                results.append(self.run_file(path))
        finally:
            self.tools.close()
        return results

    def run_file(self, path: Path) -> FileResult:
        result = FileResult(path)
        try:
            tests, problems = load(path, self.options.limits)
        except GraphError as err:
            result.problems.append(_problem(path, err.message))
            return result
        result.problems.extend(problems)
        if tests is None:
            return result
        result.graph = tests.graph_path
        missing = missing_graph(read_file(path, self.options.limits.file_size), tests)
        if missing is not None:
            result.problems.append(missing)
            return result
        linted = self._gate(tests.graph_path)
        result.lint = list(linted.errors)
        result.hints = list(linted.hints) if self._model_name(tests) == "semantic" else []
        result.model = self._model_name(tests) or "scripted answers"
        try:
            given = self.options
            result.graph_spec = load_graph(tests.graph_path, trust=given.trust, limits=given.limits)
            model = self._model(tests, result.graph_spec)
        except GraphError as err:
            result.problems.extend(err.diagnostics or [_problem(path, err.message)])
            return result
        except CgraphError as err:
            result.problems.append(_problem(path, err.message))
            return result
        self._run_cases(tests, result, model)
        return result

    def _run_cases(
        self, tests: TestFile, result: FileResult, model: ChatModel | ExitChooser
    ) -> None:
        assert result.graph_spec is not None and result.graph is not None
        memory = _memory(tests)
        for case in tests.cases:
            for run in expand(case):
                if not selected(run, self.options.patterns):
                    result.skipped += 1
                    continue
                graph = result.graph_spec
                done = run_one(tests, graph, model, memory, run, result.graph, self.tools)
                result.runs.append(done)
                self.on_run(done)
                if self.options.stop_first and not done.passed:
                    self.stopped = True
                    return

    def _gate(self, graph: Path) -> Gate:
        key = graph.resolve()
        if key not in self._gates:
            self._gates[key] = gate(graph, self.options.trust, self.options.limits)
        return self._gates[key]

    def _model_name(self, tests: TestFile) -> str | None:
        """The model the file's cases run with: None for the file's own scripted answers."""
        if self.options.model is None and isinstance(tests.model, Scripted):
            return None
        return self.options.model or str(tests.model)

    def _model(self, tests: TestFile, graph: Graph) -> ChatModel | ExitChooser:
        name = self._model_name(tests)
        if name is None:
            from cgraph.backends.llm.scripted import ScriptedModel

            assert isinstance(tests.model, Scripted)
            return ScriptedModel(tests.model.scripted)
        if self.options.record is not None:
            return _recording(name, graph, tests, self.options.record)
        if name != "semantic":  # replay and scripted models keep a position: one per file
            return _resolve(_relative(name, tests), graph)
        if name not in self._models:
            self._models[name] = _resolve(name, graph)
        return self._models[name]


def run_one(
    tests: TestFile,
    graph: Graph,
    model: ChatModel | ExitChooser,
    memory: MemoryStore,
    run: Run,
    path: Path,
    tools: ToolRunner | None = None,
) -> RunResult:
    """One run in a fresh in-memory session; it stops at the first turn that fails."""
    began = time.perf_counter()
    turns: list[TurnResult] = []
    error = None
    try:
        session = _session(tests, graph, model, memory, run, tools)
        for number, step in enumerate(run.steps, start=1):
            turn = session.send(step.user)
            view = session.view
            steps = tuple(step_name(d, _type(view, d.state)) for d in turn.decisions)
            seen = observe(turn, view.variables, view.annotations, _stored(session), steps)
            broken = tuple(check(step.expect, seen))
            turns.append(TurnResult(number, seen, broken, verdict(step.expect, seen, broken)))
            if turns[-1].mismatches:
                break
    except CgraphError as err:
        error = f"turn {len(turns) + 1}: {err.message}"
    seconds = time.perf_counter() - began
    file = tests.source or Path("<tests>")
    return RunResult(file, path, run.name, seconds, tuple(turns), error)


def _session(
    tests: TestFile,
    graph: Graph,
    model: ChatModel | ExitChooser,
    memory: MemoryStore,
    run: Run,
    tools: ToolRunner | None,
) -> Session:
    start = run.case.start
    variables = {**tests.variables, **(start.variables if start else {})}
    memory.delete(tests.user)
    sid = uuid.uuid4().hex[:12]  # task-tier memories are this session's context
    if tests.memories:
        memory.add(tests.user, [NewMemory(m.text, m.tier, sid) for m in tests.memories])
    state = start.state if start else None
    return Sessions(memory=memory, model=model, tools=tools).start(
        graph, user_id=tests.user, session_id=sid, state=state, variables=variables
    )


def _type(view: SessionView, state: str) -> str | None:
    spec = view.state_spec(state)
    return spec.type if spec is not None else None


def _stored(session: Session) -> tuple[str, ...]:
    """The texts of the memories the latest turn stored."""
    from cgraph.runtime.log.reading import stored

    return tuple(str(m.get("text", "")) for m in stored(session.log.turn_events()))


def _memory(tests: TestFile) -> MemoryStore:
    """An in-process Chroma store when the file seeds memories or checks them; else none
    (Chroma and the embedding model cost seconds to open)."""
    checks = any(t.expect.recalled or t.expect.stored for c in tests.cases for t in c.turns)
    if not tests.memories and not checks:
        return NullMemory()
    from cgraph.backends.embed import shared_embedder
    from cgraph.backends.memory.chroma import ChromaMemory

    return ChromaMemory(path=None, host=None, embedder=shared_embedder())


def _relative(name: str, tests: TestFile) -> str:
    """`replay:FILE` and `scripted:FILE` name files relative to the test file."""
    prefix, colon, rest = name.partition(":")
    if prefix in ("replay", "scripted") and colon and rest and tests.source is not None:
        return f"{prefix}:{tests.source.parent / rest}"
    return name


def _recording(name: str, graph: Graph, tests: TestFile, folder: Path) -> ChatModel | ExitChooser:
    from cgraph.backends.llm.replay import recording

    file = tests.source or Path("tests.test.yaml")
    stem = next((file.name.removesuffix(s) for s in SUFFIXES if file.name.endswith(s)), file.stem)
    cassette = folder / f"{stem}.jsonl"
    cassette.unlink(missing_ok=True)
    return recording(_resolve(name, graph), cassette)


def _resolve(name: str, graph: Graph) -> ChatModel | ExitChooser:
    return resolve_model(
        name, graph.model, embedding_model=graph.embedding_source(), acts=graph.acts
    )


def _problem(path: Path, message: str) -> Diagnostic:
    return Diagnostic(str(path), 1, 1, Severity.ERROR, "test-file", message)


def count(results: Sequence[FileResult]) -> tuple[int, int, int]:
    """(passed, failed, skipped) over every run; a file that could not run fails once."""
    runs = [r for f in results for r in f.runs]
    passed = sum(r.passed for r in runs)
    broken = sum(1 for f in results if has_errors(f.problems) and not f.runs)
    return passed, len(runs) - passed + broken, sum(f.skipped for f in results)


def decisions(results: Iterable[FileResult]) -> Tally:
    """Every decision of every run (`cgraph.testing.decisions`)."""
    return tally(t.verdict for f in results for r in f.runs for t in r.turns)


def graph_decisions(results: Sequence[FileResult]) -> list[tuple[Path, str, Tally]]:
    """(graph, model, its decisions) per graph and model, in the order files ran: a graph
    tested with its scripted answers and with a chooser is counted apart for each."""
    groups: dict[tuple[Path, str], list[FileResult]] = {}
    for f in results:
        if f.graph is not None and f.runs:
            groups.setdefault((f.graph.resolve(), f.model), []).append(f)
    found = [(shown_path(g), model, decisions(files)) for (g, model), files in groups.items()]
    return [entry for entry in found if entry[2].total]
