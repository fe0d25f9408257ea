"""Tools for the example `travel_claim.yaml`: a deterministic claims register.

Policies started on 1980-01-01: an incident before that day is refused, so the graph's
`on_error` route can be tested.
"""

from __future__ import annotations

from typing import Any

POLICY_START = "1980-01-01"


def submit_claim(incident: str, amount: float, incident_date: str) -> dict[str, Any]:
    """File the claim; the reference depends only on the claim."""
    if incident_date < POLICY_START:
        raise ValueError(f"no policy was in force on {incident_date}")
    kind = "".join(word[0] for word in incident.split()).upper()
    return {"reference": f"WT-{kind}-{incident_date.replace('-', '')}-{round(amount)}"}
