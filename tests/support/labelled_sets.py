"""The repository's labelled decision sets: where each lies, its name, and which are
fitted on (the bench scripts read them from here too).

`load_cases` is `cgraph.testing.labelled.load_cases` on the repository's `graphs/`: the
sets written on those graphs were calibrated without global exits; the global-exit set is
always asked with them.
"""

from __future__ import annotations

from pathlib import Path

from cgraph.testing import labelled
from cgraph.testing.labelled import Case

ROOT = Path(__file__).resolve().parent.parent.parent
GRAPHS = ROOT / "graphs"
LABELS = ROOT / "tests" / "fixtures" / "semantic_labels.yaml"
DEV = ROOT / "bench" / "data" / "dev_labels.yaml"
"""Negation, hedges and openings on the repository's graphs: tuned on, like LABELS."""
DEV2 = ROOT / "bench" / "data" / "dev2_labels.yaml"
"""Two more graphs' messages, labelled before the chooser was run on them; tuned on since."""
DEV3 = ROOT / "bench" / "data" / "dev3_labels.yaml"
"""Three more graphs' messages, labelled before the chooser was run on them."""
DEV4 = ROOT / "bench" / "data" / "dev4" / "dev4_labels.yaml"
"""Seven more graphs' messages (negations, corrections, "not leaving yet", confirmations),
written to fit the offline chooser's scorer on: development data, never held out."""
DEV5 = ROOT / "bench" / "data" / "dev5" / "dev5_labels.yaml"
"""Four more graphs' confirmations before a step that cannot be taken back (questions,
hedges, "wait", "no wait, yes", "yes but first…" stay): development data, never held out."""
DEV6 = ROOT / "bench" / "data" / "dev6_labels.yaml"
"""Messages that sound like a global exit (an emergency, a crisis, a hand-off) and are not one
("I feel fine today", "no chest pain", "this deadline is killing me"), on the repository's
graphs: development data, never held out."""
GLOBALS = ROOT / "bench" / "data" / "global_exit_labels.yaml"
"""The example graphs' global exits: taken where they should be, and not near them; asked
with global exits (as a session asks), never tuned on."""
HELDOUT = ROOT / "tests" / "fixtures" / "heldout" / "heldout_labels.yaml"
"""Written before the chooser changed and never tuned on: report it, do not fit it."""
HELDOUT2 = ROOT / "tests" / "fixtures" / "heldout2" / "heldout_labels.yaml"
"""A second held-out set in three more domains, written while the chooser was being tuned."""
HELDOUT3 = ROOT / "tests" / "fixtures" / "heldout3" / "heldout_labels.yaml"
"""A third held-out set in three more domains, written blind for the final figure: report it
once, never fit it."""
HELDOUT4 = ROOT / "tests" / "fixtures" / "heldout4" / "heldout_labels.yaml"
"""A fourth held-out set in three more domains, written blind like the third: report it, never
fit it."""
HELDOUT5 = ROOT / "tests" / "fixtures" / "heldout5" / "heldout_labels.yaml"
"""A fifth held-out set in six more domains, written blind by another author before the
scorer was fitted: report it, never fit it."""

FIT_SETS = (LABELS, DEV, DEV2, DEV3, DEV4, DEV5, DEV6)
"""The development sets: the scorer is fitted and its policy tuned on these only."""
HELD_OUT = (GLOBALS, HELDOUT, HELDOUT2, HELDOUT3, HELDOUT4, HELDOUT5)
"""Never fitted or tuned on: their figures are reported, their misses never shown."""

_NAMES = {
    LABELS: "check-in",
    DEV: "dev",
    DEV2: "dev2",
    DEV3: "dev3",
    DEV4: "dev4",
    DEV5: "dev5",
    DEV6: "dev6",
    GLOBALS: "globals",
    HELDOUT: "held-out",
    HELDOUT2: "held-out 2",
    HELDOUT3: "held-out 3",
    HELDOUT4: "held-out 4",
    HELDOUT5: "held-out 5",
}


def set_name(path: Path) -> str:
    return _NAMES.get(path, f"{path.parent.name}/{path.name}")


def load_cases(path: Path = LABELS, global_exits: bool | None = None) -> list[Case]:
    """The cases of a labels file, graphs next to it or in the repository's `graphs/`;
    `global_exits` as `cgraph.testing.labelled.load_cases` (always for the global-exit
    set)."""
    if global_exits is None and path.resolve() == GLOBALS.resolve():
        global_exits = True
    return labelled.load_cases(path, GRAPHS, global_exits)
