"""Generate a large, valid context graph for lint benchmarks.

    python bench/gen_graph.py 10000 > /tmp/big.yaml

The graph is `tests.support.generated_graph.generate`'s (tests build it too).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.support.generated_graph import generate

if __name__ == "__main__":
    sys.stdout.write(generate(int(sys.argv[1]) if len(sys.argv) > 1 else 10_000))
