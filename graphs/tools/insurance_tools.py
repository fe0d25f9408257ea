"""Tools for the example `insurance_quote.yaml`: a deterministic premium table.

Pure, so the example runs offline and every quote can be tested: a base rate per $1,000
of coverage by age band, a tenth off for married customers, and a deductible that grows
with the coverage.
"""

from __future__ import annotations

from typing import Any

# (youngest age of the band, monthly dollars per $1,000 of coverage)
RATES = ((18, 0.10), (30, 0.14), (45, 0.24), (60, 0.50))
MARRIED_DISCOUNT = 0.9


def calculate_quote(age: int, marital_status: str, coverage: int) -> dict[str, Any]:
    """The monthly premium for `coverage` dollars of life cover, with its deductible."""
    rate = next(r for youngest, r in reversed(RATES) if age >= youngest)
    discount = MARRIED_DISCOUNT if marital_status == "married" else 1.0
    monthly = round(coverage / 1000 * rate * discount)
    deductible = 1000 if coverage < 500_000 else 2500
    return {"monthly": monthly, "coverage": coverage, "deductible": deductible}
