"""The lint rules, generated from `cgraph/lint/codes.py` and from lint's own output.

Every code in `CODES`, under the heading of the comment that groups it there, with its
one-line description (why it matters) and a real diagnostic: lint is run on the fixtures
of `tests/fixtures/lint/` (each made to show its codes) and the first diagnostic of each
code is printed as `cgraph lint` prints it, message and hint (how to fix) included. The
few codes no fixture file can show (an unreadable path, a self-containing anchor, a
crashing check, `topology --check` without a topology, the offline hints, a link to
a file that is gone, a FIFO, a link that loops, a file over the size cap, a graph
given as a sim file) are produced
here the same way, by lint itself on a small file written for them.
"""

from __future__ import annotations

import dataclasses
import os
import re
import tempfile
from collections.abc import Iterator
from pathlib import Path

from cgraph.diagnostics import Diagnostic
from cgraph.lint.codes import CODES
from cgraph.lint.offline import OFFLINE_CHECKS
from cgraph.lint.structure import GraphContext
from cgraph.lint.walk import CHECKS, lint_paths, topology_of
from cgraph.spec.limits import ReadLimits, parse_size
from cgraph.spec.read import read_file
from cgraph.spec.simfile import parse_sim

ROOT = Path(__file__).resolve().parents[2]
CODES_FILE = ROOT / "cgraph" / "lint" / "codes.py"
FIXTURES = ROOT / "tests" / "fixtures" / "lint"

INTRO = (
    "Every diagnostic `cgraph lint` reports, generated at each build from "
    "`cgraph/lint/codes.py` (the list of codes and what each means) and from lint "
    "itself: each example is what `cgraph lint` prints for a fixture of "
    "`tests/fixtures/lint/`, with the hint that says how to fix it. Errors fail "
    "`cgraph lint` (exit 1); warnings fail it with `--strict`. Why the checks exist and "
    "how to run them: [Linting and editors](../guides/lint.md)."
)

SMALL_GRAPH = """\
cgraph: 1
name: small
start: ask
states:
  ask:
    type: action
    objective: Ask for the user's name.
    actions: [Ask for their name.]
    intra_state_navigation_guidelines: []
    action_guidelines: []
    boundary_constraints: []
    collect: [nickname]
    exit_conditions:
      - description: The user gave their name.
        next_state: END
        early: false
slots:
  nickname: {type: string}
"""


def page() -> str:
    found = examples()
    groups = grouped()
    lines = ["# Lint rules", "", INTRO, ""]
    lines += ["| code | severity | what it reports |", "|---|---|---|"]
    for codes in groups.values():
        for code in codes:
            severity = found[code].severity.value if code in found else ""
            lines.append(f"| [`{code}`](#{code}) | {severity} | {_cell(CODES[code])} |")
    lines.append("")
    for title, codes in groups.items():
        lines += [f"## {title[0].upper()}{title[1:]}", ""]
        for code in codes:
            lines += rule(code, found.get(code))
    return "\n".join(lines) + "\n"


def grouped() -> dict[str, list[str]]:
    """The codes under the comment that heads them in `codes.py`, in its order."""
    groups: dict[str, list[str]] = {}
    title = "Other"
    for line in CODES_FILE.read_text(encoding="utf-8").splitlines():
        comment = re.match(r"\s+# (.+)$", line)
        key = re.match(r'\s+"([a-z0-9-]+)":', line)
        if comment:
            title = comment.group(1)
        elif key and key.group(1) in CODES:
            groups.setdefault(title, []).append(key.group(1))
    listed = {code for codes in groups.values() for code in codes}
    missing = [code for code in CODES if code not in listed]
    if missing:  # a code written another way is still documented
        groups.setdefault("Other", []).extend(missing)
    return groups


def rule(code: str, diag: Diagnostic | None) -> list[str]:
    lines = [f"### `{code}` {{#{code}}}", ""]
    severity = f"**{diag.severity.value}**. " if diag else ""
    lines += [severity + CODES[code], ""]
    if diag is not None:
        lines += ["```text", diag.render(), "```", ""]
        if diag.hint:
            lines += [f"**How to fix:** {_sentence(diag.hint)}", ""]
    return lines


def examples() -> dict[str, Diagnostic]:
    """The first diagnostic of each code: from the fixtures, then the special cases."""
    found: dict[str, Diagnostic] = {}
    cases = sorted(p for p in FIXTURES.glob("*.yaml") if p.with_suffix(".expected").exists())
    for diag in _relative(lint_paths(cases).diagnostics, FIXTURES):
        found.setdefault(diag.code, diag)
    for diag in special():
        found.setdefault(diag.code, diag)
    return found


def special() -> Iterator[Diagnostic]:
    """The codes no fixture file shows, each produced by lint on a file written for it."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        graph = folder / "small.yaml"
        graph.write_text(SMALL_GRAPH, encoding="utf-8")
        anchors = folder / "anchor.yaml"
        anchors.write_text("a: &x [*x]\n", encoding="utf-8")
        dangling = folder / "link.yaml"
        dangling.symlink_to(folder / "moved-away.yaml")
        fifo = folder / "pipe.yaml"
        os.mkfifo(fifo)  # never read: lint refuses what is not a regular file
        loop = folder / "loop.yaml"
        loop.symlink_to(loop)
        large = folder / "large.yaml"
        large.write_text("cgraph: 1\n" + "# padding\n" * 200, encoding="utf-8")
        found = lint_paths([dangling, anchors, fifo, loop]).diagnostics
        # A smaller file cap, as `--max-file-size 1K` sets it.
        found += lint_paths([large], limits=ReadLimits(parse_size("1K"))).diagnostics
        found += lint_paths([graph], checks=OFFLINE_CHECKS).diagnostics
        found += lint_paths([graph], checks=(_crashing, *CHECKS)).diagnostics
        found += topology_of(graph, check=True)[1]
        found += parse_sim(read_file(graph))[1]  # a graph given to `cgraph simulate`
        yield from _relative(found, folder)


def _crashing(ctx: GraphContext) -> Iterator[Diagnostic]:
    """A check that fails, as a bug in cgraph would: lint reports it and goes on."""
    raise KeyError("an example of a bug")


def _relative(diagnostics: list[Diagnostic], folder: Path) -> Iterator[Diagnostic]:
    for diag in diagnostics:
        path = os.path.relpath(Path(diag.file).absolute(), folder)
        yield dataclasses.replace(diag, file=path)


def _sentence(text: str) -> str:
    text = text.strip()
    return text[0].upper() + text[1:] if text else text


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


if __name__ == "__main__":
    print(page())
