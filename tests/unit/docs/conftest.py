"""The docs' generators (`docs/gen/`) are scripts beside the pages, not a package: the
tests import them as the MkDocs hook does, from their folder."""

from __future__ import annotations

import sys

from tests.conftest import ROOT

GEN = str(ROOT / "docs" / "gen")
if GEN not in sys.path:
    sys.path.insert(0, GEN)
