"""`cgraph lint` as a library: files and folders in, every diagnostic out.

    result = lint_paths(["graphs"])
    result.diagnostics, result.exit_code(strict=False)

Pipeline per file: read (YAML with marks) → parse_graph (the published JSON Schema,
checked by `cgraph.spec.conform`) → structural, tool, template and topology checks →
sub-graph files, linted once each, with recursive inclusion reported along its chain.
"""

from __future__ import annotations

import gc
import os
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from cgraph.diagnostics import Diagnostic, Severity, has_errors
from cgraph.lint.arguments import check_argument_types
from cgraph.lint.flows import check_flows
from cgraph.lint.scopes import check_scopes
from cgraph.lint.structure import GraphContext, check_graph
from cgraph.lint.templates import check_templates, declared_names
from cgraph.lint.tools import check_tools
from cgraph.lint.topology import check_topology
from cgraph.lint.unset import check_unset_slots
from cgraph.spec.files import Refusal, read_head
from cgraph.spec.kept import Kept, StateMemo
from cgraph.spec.limits import ReadLimits
from cgraph.spec.load import parse_graph
from cgraph.spec.model import Graph
from cgraph.spec.names import SIM_KEY, TESTS_KEY
from cgraph.spec.read import Document, read_file, read_text
from cgraph.spec.topology import derive
from cgraph.spec.topology import mermaid as draw_mermaid
from cgraph.spec.trust import GRAPH_FILE_HINT, Trust, graph_file_problem

SUFFIXES = (".yaml", ".yml", ".json")
Check = Callable[[GraphContext], Iterable[Diagnostic]]
CHECKS: tuple[Check, ...] = (
    check_graph,
    check_flows,
    check_scopes,
    check_tools,
    check_argument_types,
    check_templates,
    check_unset_slots,
    check_topology,
)
"""The checks run on every graph that parses, in order."""
# A folder walk lints files with a top-level `cgraph:` key; others are skipped with a note.
# Conversation tests (`cgraph-test:`) and sim files (`cgraph-sim:`) are linted against
# their own schemas.
_GRAPH_KEY = re.compile(
    r"""^(?:["']?cgraph(?:-test|-sim)?["']?\s*:|\s*\{?\s*"cgraph(?:-test|-sim)?"\s*:)""",
    re.MULTILINE,
)
_SKIPPED_DIRS = frozenset({"node_modules", "__pycache__"})


@dataclass
class LintResult:
    """Everything one lint run found; reporters and the CLI read it."""

    diagnostics: list[Diagnostic] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    """Files linted, sub-graphs included, in order."""
    notes: list[str] = field(default_factory=list)
    """Skipped files and empty folders, said once each."""
    missing: list[str] = field(default_factory=list)
    """Paths that do not exist or cannot be read (a usage error)."""

    @property
    def errors(self) -> int:
        return sum(d.severity is Severity.ERROR for d in self.diagnostics)

    @property
    def warnings(self) -> int:
        return sum(d.severity is Severity.WARNING for d in self.diagnostics)

    def exit_code(self, strict: bool = False) -> int:
        """0 clean, 1 problems (warnings too with `strict`), 2 unreadable paths."""
        if self.missing:
            return 2
        if self.errors or (strict and self.warnings):
            return 1
        return 0


@dataclass
class _Outcome:
    graph: Graph | None
    talks: bool = True
    """Whether entering this graph can reach a user-facing state (unknown counts as yes)."""
    names: frozenset[str] = frozenset()
    """The variables it and its sub-graphs declare (they join a parent's session), and the
    slots it returns to its caller."""
    dropped: frozenset[str] = frozenset()
    """Its slots that it does not return: they are gone when it ends."""


class _Linter:
    def __init__(
        self,
        result: LintResult,
        checks: tuple[Check, ...],
        texts: Mapping[Path, str],
        kept: Kept | None = None,
        trust: Trust | None = None,
        limits: ReadLimits | None = None,
    ) -> None:
        self.result = result
        self.checks = checks
        self.texts = texts
        """Files' texts that replace what is on disk (an editor's unsaved buffers)."""
        self.kept = kept
        """What earlier lints of those texts kept: their reads' parts, their states' results."""
        self.done: dict[Path, _Outcome] = {}
        self.found: dict[Path, list[Diagnostic]] = {}
        """Each file's diagnostics, in the order the files were first linted."""
        self.outer: dict[Path, frozenset[str]] = {}
        """The names the graphs handing over to each file define, as it was last linted."""
        self.active: list[tuple[Path, str]] = []
        self.root = Path.cwd()
        """The folder graph files must stay in: the folder linted, or the named file's."""
        self.trust = trust or Trust()
        """What the person running lint allows besides `root`."""
        self.limits = limits or ReadLimits()

    def lint(self, path: Path, display: str, outer: frozenset[str] = frozenset()) -> _Outcome:
        """Lint a file once; `outer` holds the names the graphs that hand over to it
        define (a sub-graph's templates read the session's variables and its callers'
        slots)."""
        key = _real(path)
        first = key not in self.done
        if not first:
            if not self._relint(key, outer):
                return self.done[key]
            outer |= self.outer[key]
        self.active.append((key, display))
        try:
            text = self.texts.get(key)
            memo = None
            if text is None:
                doc = read_file(display, self.limits.file_size)
            elif self.kept is None:
                doc = read_text(text, display)
            else:
                doc, memo = self.kept.read(text, display), self.kept.memo(display)
            for diag in doc.diagnostics:
                if diag.code == "unreadable":
                    self.result.missing.append(display)
            outcome, diagnostics = self._check(path, doc, memo, outer)
        finally:
            self.active.pop()
        self.done[key] = outcome
        self.outer[key] = outer
        if first:
            self.result.files.append(display)
        diagnostics.sort(key=lambda d: (d.line, d.column, d.code))
        self.found[key] = list(dict.fromkeys(diagnostics))
        return outcome

    def _relint(self, key: Path, outer: frozenset[str]) -> bool:
        """Whether a file linted before (on its own, or from another caller) is linted
        again with a caller's names: only when they are new and could answer one of its
        `undefined-variable`s (the one check that reads them)."""
        if outer <= self.outer[key]:
            return False
        return any(d.code == "undefined-variable" for d in self.found[key])

    def diagnostics(self) -> list[Diagnostic]:
        return [d for found in self.found.values() for d in found]

    def _check(
        self, path: Path, doc: Document, memo: StateMemo | None, outer: frozenset[str]
    ) -> tuple[_Outcome, list[Diagnostic]]:
        if isinstance(doc.data, dict) and TESTS_KEY in doc.data:
            # Imported for test files only: its models cost a graph's lint start-up time.
            from cgraph.spec.testfile import missing_graph, parse_tests

            tests, found = parse_tests(doc)
            missing = missing_graph(doc, tests) if tests is not None else None
            return _Outcome(None), [*found, *([missing] if missing else [])]
        if isinstance(doc.data, dict) and SIM_KEY in doc.data:
            from cgraph.lint.sims import check_sim_file  # sim files only, like test files

            return _Outcome(None), check_sim_file(doc, self.texts, self.trust, self.limits)
        graph, diagnostics = parse_graph(doc, memo)
        if graph is None:
            return _Outcome(None), diagnostics
        talking: set[str] = set()
        inherited: set[str] = set()
        dropped: dict[str, str] = {}
        passed = outer | declared_names(graph)
        for name, state in graph.states.items():
            if state.type == "graph":
                sub, problem = self._subgraph(doc, path, name, state.graph, passed)
                if problem:
                    diagnostics.append(problem)
                if sub is None or sub.talks:
                    talking.add(name)
                inherited.update(sub.names if sub else ())
                dropped.update(dict.fromkeys(sub.dropped if sub else (), state.graph))
        ctx = GraphContext(
            doc,
            graph,
            frozenset(talking),
            frozenset(inherited),
            dropped,
            self.root,
            self.texts,
            memo,
            outer_names=outer,
            trust=self.trust,
            limits=self.limits,
        )
        for check in self.checks:
            try:
                diagnostics.extend(check(ctx))
            except Exception as err:  # a bug in one check must not hide the others' findings
                diagnostics.append(
                    doc.diag(
                        (),
                        "internal-error",
                        f"cgraph failed in {check.__name__}: {err!r}",
                        "please report this with the file attached",
                    )
                )
        talks = any(s.type == "action" for s in graph.states.values()) or bool(talking)
        # A sub-graph's slots are its own while it runs; only those it returns outlive it.
        kept = frozenset(graph.slots) - frozenset(graph.returns)
        exposed = (declared_names(graph) - kept) | inherited
        return _Outcome(graph, talks, exposed, kept), diagnostics

    def _subgraph(
        self, doc: Document, path: Path, state: str, target: str, passed: frozenset[str]
    ) -> tuple[_Outcome | None, Diagnostic | None]:
        where = ("states", state, "graph")
        sub_path = Path(os.path.normpath(path.parent / target))
        display = str(sub_path)
        outside = graph_file_problem(sub_path, self.root, self.trust)
        if outside is not None:  # never opened: `/etc/shadow`, `../outside.yaml`
            message = f"state `{state}` hands over to `{target}`, which {outside}"
            return None, doc.diag(where, "graph-outside", message, GRAPH_FILE_HINT)
        if sub_path.is_dir() or not (sub_path.exists() or sub_path.is_symlink()):
            found = "is a folder" if sub_path.is_dir() else "does not exist"
            return None, doc.diag(
                where,
                "graph-missing",
                f"state `{state}` hands over to `{target}`, which {found} (looked for {display})",
                "name a graph file; the path is relative to this graph file",
            )
        start = self._index(_real(sub_path))
        if start >= 0:
            loop = " → ".join([*(shown for _, shown in self.active[start:]), display])
            return None, doc.diag(
                where,
                "graph-recursive",
                f"graph files include each other: {loop}",
                "a sub-graph must not hand the conversation back to a graph that contains it",
            )
        return self.lint(sub_path, display, passed), None

    def _index(self, key: Path) -> int:
        return next((i for i, (k, _) in enumerate(self.active) if k == key), -1)


def lint_paths(
    paths: Iterable[str | Path],
    *,
    only_graphs: bool = False,
    checks: tuple[Check, ...] = CHECKS,
    texts: Mapping[Path, str] | None = None,
    kept: Kept | None = None,
    trust: Trust | None = None,
    limits: ReadLimits | None = None,
) -> LintResult:
    """Lint files and folders (recursively `*.yaml`, `*.yml`, `*.json`).

    A folder walk skips files without a top-level `cgraph:` key (with a note); a file
    named explicitly is always linted, unless `only_graphs` applies the same rule to it.
    `checks` replaces the semantic checks run after the format check (default: all).
    `texts` (by resolved path) is read instead of those files on disk: a graph and the
    sub-graphs it hands over to as an editor holds them, saved or not. With `kept`, their
    lint reuses what the last one kept of each (`cgraph.spec.kept`): the same diagnostics,
    from only the parts and states a change touched. `trust` is what graphs may reach
    besides their folder (default `Trust()`: nothing) and `limits` what is read (default
    `ReadLimits()`), as for `load_graph`.
    """
    collecting = gc.isenabled()
    gc.disable()  # see reader.read_text: lint builds large, acyclic trees
    try:
        return _lint_all(
            paths, only_graphs, _Linter(LintResult(), checks, texts or {}, kept, trust, limits)
        )
    finally:
        if collecting:
            gc.enable()


def _lint_all(paths: Iterable[str | Path], only_graphs: bool, linter: _Linter) -> LintResult:
    result, texts = linter.result, linter.texts
    for given in paths:
        path = Path(given)
        linter.root = path if path.is_dir() else path.parent
        if path.is_dir():
            found = list(_walk(path, result))
            if not found:
                result.notes.append(f"{given}: no graph files found")
            for file in found:
                linter.lint(file, str(file))
        elif only_graphs and path.is_file() and not looks_like_graph(path):
            result.notes.append(f"{given}: skipped, no top-level `cgraph:` key")
        elif path.exists() or path.is_symlink() or _real(path) in texts:
            linter.lint(path, str(given))
        else:
            result.missing.append(str(given))
    result.diagnostics = linter.diagnostics()
    return result


def lint_file(
    path: str | Path, *, trust: Trust | None = None, limits: ReadLimits | None = None
) -> list[Diagnostic]:
    """The diagnostics of one file (and of the sub-graphs it hands over to)."""
    return lint_paths([path], trust=trust, limits=limits).diagnostics


def topology_of(
    path: Path, *, check: bool = False, mermaid: bool = False, limits: ReadLimits | None = None
) -> tuple[str, list[Diagnostic]]:
    """The derived topology of a graph file (as Mermaid with `mermaid`), or (with `check`)
    the authored one's problems.

    Returns the text to print and the diagnostics that make the command fail.
    """
    doc = read_file(str(path), (limits or ReadLimits()).file_size)
    graph, diagnostics = parse_graph(doc)
    if graph is None or has_errors(diagnostics):
        return "", [d for d in diagnostics if d.severity is Severity.ERROR]
    if not check:
        return (draw_mermaid(graph) if mermaid else derive(graph)), []
    if graph.topology is None:
        return "", [
            doc.diag(
                (),
                "topology-missing",
                "the graph has no `topology:` to check",
                "add one; `cgraph topology GRAPH` prints a starting point",
            )
        ]
    found = list(check_topology(GraphContext(doc, graph)))
    return ("" if found else "topology agrees with the states\n"), found


def _walk(folder: Path, result: LintResult) -> Iterable[Path]:
    for root, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in _SKIPPED_DIRS)
        for name in sorted(files):
            if not name.endswith(SUFFIXES):
                continue
            file = Path(root, name)
            if looks_like_graph(file):
                yield file
            else:
                result.notes.append(f"{file}: skipped, no top-level `cgraph:` key")


def looks_like_graph(path: Path) -> bool:
    head = read_head(path, 1 << 20)  # a FIFO or a device is never waited on nor read
    if isinstance(head, Refusal):
        return True  # let lint report why it cannot be read
    return looks_like_graph_text(head.decode("utf-8-sig", "replace"))


def looks_like_graph_text(text: str) -> bool:
    """Whether a file's text has a top-level `cgraph:` (or `cgraph-test:`) key."""
    return _GRAPH_KEY.search(text) is not None


def _real(path: Path) -> Path:
    """The path with its links followed; a link that loops stays as it is (lint reports
    it when it reads the file) where `Path.resolve` would raise."""
    return Path(os.path.realpath(path))
