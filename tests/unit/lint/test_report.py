from __future__ import annotations

import io
import json
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from cgraph.diagnostics import Diagnostic, Severity
from cgraph.errors import ConfigError
from cgraph.lint.codes import CODES
from cgraph.lint.report import REPORTERS, reporter
from cgraph.lint.walk import LintResult

ERR = Diagnostic(
    "g/a.yaml",
    3,
    5,
    Severity.ERROR,
    "unknown-state",
    "`next_state` names `ned`, which is not a state",
    "did you mean `END`?",
)
WARN = Diagnostic(
    "g/b, c.yaml",
    7,
    1,
    Severity.WARNING,
    "same-target",
    "exits 1 and 2 both lead to `END`: 100%\nsure",
    "merge them",
)
RESULT = LintResult(
    diagnostics=[ERR, WARN],
    files=["g/a.yaml", "g/b, c.yaml"],
    notes=["g/x.yml: skipped, no top-level `cgraph:` key"],
)

# The parts of SARIF 2.1.0 (sarif-schema-2.1.0.json) that code-scanning uploads rely on.
SARIF_SUBSET: dict[str, Any] = {
    "type": "object",
    "required": ["version", "runs"],
    "properties": {
        "version": {"const": "2.1.0"},
        "$schema": {"type": "string", "format": "uri"},
        "runs": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "required": ["tool", "results"],
                "properties": {
                    "tool": {
                        "type": "object",
                        "required": ["driver"],
                        "properties": {
                            "driver": {
                                "type": "object",
                                "required": ["name"],
                                "properties": {
                                    "name": {"type": "string"},
                                    "rules": {
                                        "type": "array",
                                        "items": {
                                            "type": "object",
                                            "required": ["id"],
                                            "properties": {
                                                "id": {"type": "string"},
                                                "shortDescription": {"$ref": "#/$defs/message"},
                                            },
                                        },
                                    },
                                },
                            },
                        },
                    },
                    "results": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "required": ["message", "ruleId", "locations"],
                            "properties": {
                                "ruleId": {"type": "string"},
                                "ruleIndex": {"type": "integer", "minimum": 0},
                                "level": {"enum": ["none", "note", "warning", "error"]},
                                "message": {"$ref": "#/$defs/message"},
                                "locations": {
                                    "type": "array",
                                    "items": {
                                        "type": "object",
                                        "required": ["physicalLocation"],
                                        "properties": {
                                            "physicalLocation": {
                                                "type": "object",
                                                "required": ["artifactLocation", "region"],
                                                "properties": {
                                                    "artifactLocation": {
                                                        "type": "object",
                                                        "required": ["uri"],
                                                    },
                                                    "region": {
                                                        "type": "object",
                                                        "properties": {
                                                            "startLine": {
                                                                "type": "integer",
                                                                "minimum": 1,
                                                            },
                                                            "startColumn": {
                                                                "type": "integer",
                                                                "minimum": 1,
                                                            },
                                                        },
                                                    },
                                                },
                                            }
                                        },
                                    },
                                },
                            },
                        },
                    },
                },
            },
        },
    },
    "$defs": {
        "message": {
            "type": "object",
            "required": ["text"],
            "properties": {"text": {"type": "string"}},
        }
    },
}


def _run(name: str, result: LintResult = RESULT, strict: bool = False) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    reporter(name, out, err, strict=strict).report(result)
    return out.getvalue(), err.getvalue()


def test_text_lines_hints_and_summary() -> None:
    out, err = _run("text")
    assert out.splitlines() == [
        "g/a.yaml:3:5 error unknown-state `next_state` names `ned`, which is not a state",
        "  hint: did you mean `END`?",
        "g/b, c.yaml:7:1 warning same-target exits 1 and 2 both lead to `END`: 100%",
        "sure",
        "  hint: merge them",
        "1 error, 1 warning in 2 files",
    ]
    assert err == "note: g/x.yml: skipped, no top-level `cgraph:` key\n"
    assert _run("text", strict=True)[0].endswith("(--strict: warnings fail)\n")


def test_json_is_a_list_of_exactly_the_documented_fields() -> None:
    out, err = _run("json")
    items = json.loads(out)
    assert items[0] == {
        "file": "g/a.yaml",
        "line": 3,
        "column": 5,
        "severity": "error",
        "code": "unknown-state",
        "message": "`next_state` names `ned`, which is not a state",
        "hint": "did you mean `END`?",
    }
    assert [i["severity"] for i in items] == ["error", "warning"]
    assert "note:" in err  # notes never mix with machine-readable output
    assert json.loads(_run("json", LintResult())[0]) == []


def test_github_annotations_escape_data_and_properties() -> None:
    out, _ = _run("github")
    lines = out.splitlines()
    assert lines[0] == (
        "::error file=g/a.yaml,line=3,col=5,title=cgraph unknown-state::"
        "`next_state` names `ned`, which is not a state%0Ahint: did you mean `END`?"
    )
    assert lines[1].startswith(
        "::warning file=g/b%2C c.yaml,line=7,col=1,title=cgraph same-target::"
    )
    assert "100%25%0Asure%0Ahint: merge them" in lines[1]
    assert len(lines) == 2


def test_sarif_is_valid_2_1_0_with_one_rule_per_code() -> None:
    log = json.loads(_run("sarif")[0])
    Draft202012Validator(SARIF_SUBSET).validate(log)
    run = log["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    assert [r["id"] for r in rules] == ["same-target", "unknown-state"]
    assert rules[1]["shortDescription"]["text"] == CODES["unknown-state"]
    first = run["results"][0]
    assert rules[first["ruleIndex"]]["id"] == first["ruleId"] == "unknown-state"
    assert first["level"] == "error"
    region = first["locations"][0]["physicalLocation"]["region"]
    assert region == {"startLine": 3, "startColumn": 5}
    assert (
        run["results"][1]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
        == "g/b%2C%20c.yaml"
    )


def test_missing_paths_are_reported_on_stderr() -> None:
    _, err = _run("json", LintResult(missing=["nope.yaml"]))
    assert "error: nope.yaml: no such file or folder" in err


def test_reporter_table_and_unknown_names() -> None:
    assert list(REPORTERS) == ["text", "json", "github", "sarif"]
    with pytest.raises(ConfigError, match="formats are text, json, github, sarif"):
        reporter("xml", io.StringIO(), io.StringIO())
