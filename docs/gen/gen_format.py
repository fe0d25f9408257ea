"""The format references, generated from the published JSON Schemas.

One section per object of a schema (the root first, then each `$defs` entry in the order
the root reaches it), one row per key: its type, whether it is required, its default and
its description, all read from the schema, and an example of the key taken from a real
graph (or test file) of the repository where one uses it. The schemas themselves are
generated from `cgraph/spec/model.py` and `cgraph/spec/testfile.py` (`make schema`), so a
key documented here is a key `cgraph lint` accepts, described in the words an editor
shows on hover.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from cgraph.spec.model import HANDLER_PATTERN, ID_PATTERN, TARGET_PATTERN
from cgraph.spec.read import read_file

ROOT = Path(__file__).resolve().parents[2]
GRAPH_SCHEMA = ROOT / "schemas" / "context-graph.schema.json"
TEST_SCHEMA = ROOT / "schemas" / "cgraph-test.schema.json"
SIM_SCHEMA = ROOT / "schemas" / "cgraph-sim.schema.json"
EXAMPLE_WIDTH = 64
"""An example longer than this (as one line of YAML) is cut and marked `…`."""

PATTERNS = {
    ID_PATTERN: "id",
    TARGET_PATTERN: "state id, `END`, or `file.yaml#state`",
    HANDLER_PATTERN: "`module:function`",
}


@dataclass(frozen=True)
class Sources:
    """Where the examples come from: YAML files the schema describes, by root object."""

    files: tuple[Path, ...]
    found: dict[str, list[tuple[Path, dict[str, Any]]]] = field(default_factory=dict)


def graph_page() -> str:
    """The reference of the context-graph format."""
    files = sorted((ROOT / "graphs").glob("*.yaml"))
    files += sorted((ROOT / "bench" / "data" / "graphs").glob("**/*.yaml"))
    intro = (
        "Every key of a context graph file, generated at each build from the published "
        "JSON Schema (`schemas/context-graph.schema.json`, which `make schema` writes from "
        "`cgraph/spec/model.py`). The descriptions are the ones your editor shows on "
        "hover. Each example is a line of a real graph of the repository "
        "(`graphs/`, `bench/data/graphs/`) that uses the key; for a key no graph writes, "
        "*(default)* shows its default value and *(sketch)* a value of the right shape."
    )
    return page(_load(GRAPH_SCHEMA), "Format reference", intro, files, "Graph")


def test_page() -> str:
    """The reference of the conversation-test format (`*.test.yaml`)."""
    files = sorted((ROOT / "graphs" / "tests").glob("*.test.yaml"))
    intro = (
        "Every key of a conversation test file (`*.test.yaml`), generated at each build "
        "from the published JSON Schema (`schemas/cgraph-test.schema.json`, which `make "
        "schema` writes from `cgraph/spec/testfile.py`). Examples come from the test files "
        "in `graphs/tests/`. How to write and run tests: "
        "[Testing conversations](../guides/testing.md)."
    )
    return page(_load(TEST_SCHEMA), "Test file reference", intro, files, "TestFile")


def sim_page() -> str:
    """The reference of the simulation format (`*.sim.yaml`)."""
    files = sorted((ROOT / "graphs" / "sims").glob("*.sim.yaml"))
    intro = (
        "Every key of a sim file (`*.sim.yaml`), generated at each build from the published "
        "JSON Schema (`schemas/cgraph-sim.schema.json`, which `make schema` writes from "
        "`cgraph/spec/simfile.py`). Examples come from the sim files in `graphs/sims/`. "
        "How to simulate: [Simulating conversations](../guides/simulate.md)."
    )
    return page(_load(SIM_SCHEMA), "Sim file reference", intro, files, "SimFile")


def _load(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def page(schema: dict[str, Any], title: str, intro: str, files: Iterable[Path], root: str) -> str:
    """A whole reference page for `schema`, whose root object is called `root`."""
    found = examples(schema, files, root)
    lines = [f"# {title}", "", intro, ""]
    for name in objects(schema, root):
        node = schema if name == root else schema["$defs"][name]
        lines += section(name, node, found.get(name, []), root)
    return "\n".join(lines) + "\n"


def objects(schema: dict[str, Any], root: str) -> list[str]:
    """The root, then every `$defs` object, each right after the first object using it."""
    order = [root]

    def visit(node: Any) -> None:
        for name in refs(node):
            if name not in order:
                order.append(name)
                visit(schema["$defs"][name])

    visit({k: v for k, v in schema.items() if k != "$defs"})
    return order + sorted(set(schema.get("$defs", {})) - set(order))


def refs(node: Any) -> Iterator[str]:
    """The `$defs` names a schema node refers to, in the order they appear."""
    if isinstance(node, dict):
        if "$ref" in node:
            yield node["$ref"].rsplit("/", 1)[-1]
        for key, value in node.items():
            if key not in ("$defs", "discriminator"):
                yield from refs(value)
    elif isinstance(node, list):
        for value in node:
            yield from refs(value)


def anchor(name: str) -> str:
    return name.lower()


def heading(name: str) -> str:
    """`ActionState` → `Action state`."""
    words = re.findall(r"[A-Z][a-z]*|[a-z]+", name)
    return " ".join([words[0], *(w.lower() for w in words[1:])]) if words else name


def section(name: str, node: dict[str, Any], found: list[tuple[Path, Any]], root: str) -> list[str]:
    """One object: its description, a table of its keys, and a real instance of it."""
    lines = [f"## {heading(name)} {{#{anchor(name)}}}", ""]
    if node.get("description"):
        lines += [_one_line(node["description"]), ""]
    required = set(node.get("required", ()))
    lines += ["| key | type | description |", "|---|---|---|"]
    for key, prop in node.get("properties", {}).items():
        default = "**required**" if key in required else _default(prop)
        row = [
            f"`{key}`{{#{anchor(name)}-{_slug(key)}}}",
            f"{type_of(prop)}<br>{default}",
            f"{_one_line(prop.get('description', ''))}<br>e.g. {example(key, prop, found)}",
        ]
        lines.append("| " + " | ".join(_cell(c) for c in row) + " |")
    lines.append("")
    if found and name != root:
        path, instance = min(found, key=lambda item: len(_block(item[1])))
        lines += [
            f"A whole one, from `{path.relative_to(ROOT)}`:",
            "",
            "```yaml",
            _block(instance).rstrip(),
            "```",
            "",
        ]
    return lines


def _slug(key: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", key.lower()).strip("-")


def type_of(node: dict[str, Any]) -> str:
    """A schema node in words: `list of [ExitCondition](#exitcondition)`, `integer ≥ 1`."""
    if "$ref" in node:
        name = node["$ref"].rsplit("/", 1)[-1]
        return f"[{heading(name)}](#{anchor(name)})"
    if "const" in node:
        return f"`{json.dumps(node['const'])}`"
    if "enum" in node:
        return "one of " + ", ".join(f"`{v}`" for v in node["enum"])
    if "oneOf" in node:
        return "one of " + ", ".join(type_of(member) for member in node["oneOf"])
    if "anyOf" in node:
        members = [m for m in node["anyOf"] if m.get("type") != "null"]
        text = " or ".join(type_of(m) for m in members)
        return text + (" or null" if len(members) < len(node["anyOf"]) else "")
    kind = node.get("type")
    if kind == "array":
        return f"list of {type_of(node.get('items', {}))}"
    if kind == "object" or "additionalProperties" in node:
        keys = PATTERNS.get(node.get("propertyNames", {}).get("pattern", ""), "text")
        if "enum" in node.get("propertyNames", {}):
            keys = " / ".join(f"`{v}`" for v in node["propertyNames"]["enum"])
        values = node.get("additionalProperties")
        if values is True or values == {} or values is None:
            return f"map of {keys} → any value" if values is not None else "object"
        return f"map of {keys} → {type_of(values)}"
    if kind == "string":
        if "pattern" in node:
            return PATTERNS.get(node["pattern"], f"text matching `{node['pattern']}`")
        return "text"
    if kind in ("integer", "number"):
        return f"{kind}{_bounds(node)}"
    if kind in ("boolean", "null"):
        return str(kind)
    return "any value"


def _bounds(node: dict[str, Any]) -> str:
    low, high = node.get("minimum"), node.get("maximum")
    if low is not None and high is not None:
        return f" {_num(low)}–{_num(high)}"
    if low is not None:
        return f" ≥ {_num(low)}"
    if "exclusiveMinimum" in node:
        return f" > {_num(node['exclusiveMinimum'])}"
    return ""


def _num(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


def _default(prop: dict[str, Any]) -> str:
    if "default" not in prop:
        return "optional"
    value = prop["default"]
    if value is None:
        return "default: unset"
    return f"default: {_code(_cut(_flow(value)))}"


def examples(
    schema: dict[str, Any], files: Iterable[Path], root: str
) -> dict[str, list[tuple[Path, Any]]]:
    """Every instance of each object in `files`, by object name, in file order."""
    found: dict[str, list[tuple[Path, Any]]] = {}
    for path in files:
        data = read_file(path).data  # cgraph's reader: YAML as cgraph reads it
        if isinstance(data, dict):
            found.setdefault(root, []).append((path, data))
            _walk(schema, schema, data, path, found)
    return found


def _walk(
    schema: dict[str, Any],
    node: Any,
    data: Any,
    path: Path,
    found: dict[str, list[tuple[Path, Any]]],
) -> None:
    if not isinstance(node, dict):
        return
    if "$ref" in node:
        name = node["$ref"].rsplit("/", 1)[-1]
        if isinstance(data, dict):
            found.setdefault(name, []).append((path, data))
            _walk(schema, schema["$defs"][name], data, path, found)
        return
    tag = node.get("discriminator", {})
    if tag and isinstance(data, dict):
        target = tag["mapping"].get(data.get(tag["propertyName"]))
        if target:
            _walk(schema, {"$ref": target}, data, path, found)
        return
    for member in node.get("anyOf", []):
        _walk(schema, member, data, path, found)
    if isinstance(data, dict):
        props = node.get("properties")
        if props:
            for key, value in data.items():
                if key in props:
                    _walk(schema, props[key], value, path, found)
        elif isinstance(node.get("additionalProperties"), dict):
            for value in data.values():
                _walk(schema, node["additionalProperties"], value, path, found)
    if isinstance(data, list) and isinstance(node.get("items"), dict):
        for value in data:
            _walk(schema, node["items"], value, path, found)


def example(key: str, prop: dict[str, Any], found: list[tuple[Path, Any]]) -> str:
    """`key: value` as a graph writes it, or the default marked *(default)*."""
    for _path, instance in found:
        if key in instance:
            return _code(_cut(f"{key}: {_flow(instance[key])}"))
    if "default" in prop:
        return _code(_cut(f"{key}: {_flow(prop['default'])}")) + " *(default)*"
    return _code(_cut(f"{key}: {_flow(sketch(prop))}")) + " *(sketch)*"


def sketch(node: dict[str, Any]) -> Any:
    """A value of the right shape for a key no graph writes and that has no default."""
    if "const" in node:
        return node["const"]
    if "enum" in node:
        return node["enum"][0]
    for group in ("anyOf", "oneOf"):
        members = [m for m in node.get(group, []) if m.get("type") != "null"]
        if members:
            return sketch(members[0])
    kind = node.get("type")
    if kind == "array":
        return [sketch(node.get("items", {}))]
    if kind == "object" or "$ref" in node:
        names = node.get("propertyNames", {})
        key = names["enum"][0] if "enum" in names else "name"
        values = node.get("additionalProperties")
        return {key: sketch(values) if isinstance(values, dict) and values else "…"}
    if kind == "string":
        return {ID_PATTERN: "name", TARGET_PATTERN: "next_state"}.get(node.get("pattern", ""), "…")
    if kind in ("integer", "number"):
        return node.get("minimum", 1)
    return True if kind == "boolean" else "…"


def _code(text: str) -> str:
    """An inline code span that holds any text (backticks included)."""
    return f"`` {text} ``" if "`" in text else f"`{text}`"


def _flow(value: Any) -> str:
    """A value as one line of YAML (flow style)."""
    text = yaml.safe_dump(
        value, default_flow_style=True, width=10_000, allow_unicode=True, sort_keys=False
    )
    return text.strip().removesuffix("...").strip().replace("\n", " ")


def _block(value: Any) -> str:
    return yaml.safe_dump(value, sort_keys=False, allow_unicode=True, width=88)


def _cut(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= EXAMPLE_WIDTH else text[: EXAMPLE_WIDTH - 1].rstrip() + "…"


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _cell(text: str) -> str:
    """Text safe inside a Markdown table cell (a `|` would end the cell)."""
    return text.replace("|", "\\|")


if __name__ == "__main__":
    print(graph_page())
