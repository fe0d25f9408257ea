from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from cgraph.spec.read import read_file
from cgraph.spec.schema import dumps, generate, published
from tests.conftest import FIXTURES, GRAPHS, ROOT

SHIPPED = [
    ROOT / "schemas" / "context-graph.schema.json",
    ROOT / "cgraph" / "spec" / "data" / "context-graph.schema.json",
]
EXAMPLES = sorted(GRAPHS.glob("*.yaml"))
# Fixtures whose YAML reads into data: the schema and the models must agree on each.
READABLE = [p for p in sorted((FIXTURES / "lint").rglob("*.yaml")) if read_file(p).data is not None]
SCHEMA_CODES = {"missing-key", "unknown-key", "state-type", "schema", "not-a-graph"}


@cache
def _validator() -> Draft202012Validator:
    schema = published()
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: str(p.relative_to(ROOT)))
def test_shipped_schema_is_generated_from_the_models(path: Path) -> None:
    assert path.read_text() == dumps(generate()), "run `make schema`"


def test_schema_documents_fields_for_editors() -> None:
    schema = generate()
    action = schema["$defs"]["ActionState"]["properties"]
    assert action["actions"]["description"] == "Ordered client-facing interaction steps."
    assert json.loads(dumps(schema)) == schema


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_every_example_graph_is_valid_against_the_published_schema(path: Path) -> None:
    errors = list(_validator().iter_errors(read_file(path).data))
    assert errors == []


def test_schema_invalid_fixtures_are_rejected_by_the_schema() -> None:
    rejected = []
    for path in READABLE:
        expected = path.with_suffix(".expected")
        codes = (
            {line.split(" ")[1] for line in expected.read_text().splitlines()}
            if (expected.exists())
            else set()
        )
        if codes & SCHEMA_CODES:
            assert not _validator().is_valid(read_file(path).data), path.name
            rejected.append(path.name)
    assert len(rejected) >= 5
