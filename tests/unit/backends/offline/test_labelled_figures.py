"""The offline chooser's figures on the labelled sets, frozen: a change to the lexicon,
the features, the weights or the policy that moves any set's right or wrong count by more
than one case fails here (`bench/bench_decisions.py --heldout` prints the same figures).

The held-out sets were never fitted or tuned on; these figures were read as aggregates
only. The check-in is the set a new user meets first (`make demo`); its goal is 97 % right,
which the fitted chooser does not reach yet (it asks 10 times, mostly before reading or
listing files, which cannot be taken back)."""

from __future__ import annotations

from pathlib import Path

import pytest

from cgraph.testing.labelled_eval import figures, run_chooser
from tests.support.labelled_sets import (
    GLOBALS,
    HELDOUT,
    HELDOUT2,
    HELDOUT3,
    HELDOUT4,
    HELDOUT5,
    LABELS,
    load_cases,
)
from tests.unit.backends.offline._chooser import chooser

# (right, wrong, clarify) as measured with the shipped weights.
FROZEN = {
    LABELS: (122, 2, 10),
    GLOBALS: (21, 1, 2),
    HELDOUT: (194, 37, 23),
    HELDOUT2: (264, 47, 27),
    HELDOUT3: (321, 79, 53),
    HELDOUT4: (254, 67, 29),
    HELDOUT5: (214, 86, 41),
}


@pytest.mark.slow
@pytest.mark.parametrize("path", list(FROZEN), ids=lambda p: Path(p).parent.name)
def test_the_figures_stay_where_they_were_frozen(path: Path) -> None:
    found = figures(run_chooser(chooser(), load_cases(path)))
    right, wrong, clarify = FROZEN[path]
    assert found.turns == right + wrong + clarify
    assert abs(found.right - right) <= 1 and abs(found.wrong - wrong) <= 1, found.line()
