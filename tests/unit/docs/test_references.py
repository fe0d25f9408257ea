"""The generated references hold everything the code knows: every key of both schemas,
every command and option of the command line, every lint code with a real example, every
threshold of the offline chooser, every HTTP route. They are generated at each build, so
they cannot drift; these tests make sure nothing is left out of them."""

from __future__ import annotations

import json
import re
from dataclasses import fields

import gen_cli
import gen_format
import gen_http
import gen_lint
import gen_offline
import pytest
from typer.testing import CliRunner

from cgraph.backends.offline.calibration import Calibration
from cgraph.cli.app import app
from cgraph.lint.codes import CODES
from cgraph.serve.app import ROUTES
from tests.unit.docs.pages import pages

SCHEMAS = {
    "graph": (gen_format.GRAPH_SCHEMA, "Graph", gen_format.graph_page),
    "test": (gen_format.TEST_SCHEMA, "TestFile", gen_format.test_page),
}


@pytest.mark.parametrize("which", sorted(SCHEMAS))
def test_every_key_of_the_schema_has_a_row_with_a_description_and_an_example(which: str) -> None:
    path, root, make = SCHEMAS[which]
    schema = json.loads(path.read_text(encoding="utf-8"))
    page = make()
    for name, node in {root: schema, **schema["$defs"]}.items():
        assert f"{{#{name.lower()}}}" in page, f"no section for {name}"
        for key in node["properties"]:
            row = next(
                (line for line in page.splitlines() if f"`{key}`{{#{name.lower()}-" in line), None
            )
            assert row is not None, f"{name}.{key} has no row in the {which} reference"
            description = row.split(" | ")[2]
            assert not description.startswith("<br>"), f"{name}.{key} has no description"
            assert "<br>e.g. `" in description, f"{name}.{key} has no example"


def _help(*command: str) -> str:
    done = CliRunner().invoke(app, [*command, "--help"])
    assert done.exit_code == 0, done.output
    return done.output


def _commands() -> list[tuple[str, ...]]:
    """Every command and sub-command, as `cgraph --help` and each group's `--help` list them."""
    found: list[tuple[str, ...]] = []
    for command in re.findall(r"^  ([a-z][a-z-]*) ", _help(), re.M):
        found.append((command,))
        text = _help(command)
        if "Commands:" in text:
            subs = re.findall(r"^  ([a-z][a-z-]*) ", text.split("Commands:")[-1], re.M)
            found += [(command, sub) for sub in subs]
    return found


OPTION = re.compile(r"(?<![\w-])(--[a-z][a-z-]*|-[a-z])\b")


def test_every_command_and_option_of_the_command_line_is_in_its_reference() -> None:
    page = gen_cli.page()
    commands = _commands()
    assert {("lint",), ("run",), ("test",), ("serve",), ("store", "migrate")} <= set(commands)
    for path in commands:
        name = "cgraph " + " ".join(path)
        assert f"## `{name}`" in page, f"{name} is missing"
        for option in set(OPTION.findall(_help(*path))) - {"--help"}:
            assert f"`{option}`" in page, f"`{option}` of {name} is missing"


def test_every_lint_code_has_its_rule_with_a_real_example() -> None:
    page = gen_lint.page()
    for code in CODES:
        assert f"### `{code}` {{#{code}}}" in page, f"{code} has no rule"
        rule = page.split(f"### `{code}` {{#{code}}}", 1)[1].split("\n### ", 1)[0]
        assert re.search(rf"^\S+:\d+:\d+ (error|warning) {re.escape(code)} ", rule, re.M), (
            f"{code} has no example diagnostic"
        )


def test_the_offline_chooser_page_shows_every_threshold_in_force() -> None:
    page = gen_offline.page()
    shipped = json.loads((gen_offline.OFFLINE / "weights.json").read_text(encoding="utf-8"))
    in_force = Calibration.fitted(shipped["calibration"])
    for spec in fields(Calibration):
        shown = gen_offline.value(spec.name)
        assert float(shown) == pytest.approx(getattr(in_force, spec.name))
        assert f"`{spec.name}`{{#" in page and f"**{shown}**" in page
    for feature in shipped["features"]:
        assert f"| `{feature}` |" in page


def test_every_threshold_a_page_quotes_exists() -> None:
    names = {spec.name for spec in fields(Calibration)}
    for page in pages():
        for name in re.findall(r"\{\{\s*cal\.([a-z_]+)\s*\}\}", page.read_text(encoding="utf-8")):
            assert name in names, f"{page.name} quotes `{name}`, which Calibration has no more"


def test_every_http_route_is_in_the_serving_table() -> None:
    table = gen_http.routes()
    for route in ROUTES:
        assert f"`{route.method} {route.path}`" in table
