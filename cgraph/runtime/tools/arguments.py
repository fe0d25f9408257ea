"""A tool call's arguments against the tool's `parameters` JSON Schema."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cgraph.errors import ToolError


def argument_errors(parameters: Mapping[str, Any], arguments: Mapping[str, Any]) -> list[str]:
    """Why `arguments` do not fit the tool's `parameters` JSON Schema (empty when they do)."""
    from jsonschema import Draft202012Validator  # only when a tool is called

    validator = Draft202012Validator(dict(parameters))
    found = sorted(validator.iter_errors(dict(arguments)), key=lambda e: list(e.path))
    return [_located(error.path, error.message) for error in found]


def _located(path: Any, message: str) -> str:
    where = ".".join(str(step) for step in path)
    return f"`{where}`: {message}" if where else message


def check_arguments(name: str, parameters: Mapping[str, Any], arguments: Mapping[str, Any]) -> None:
    """`ToolError` naming every argument that does not fit the tool's parameters."""
    errors = argument_errors(parameters, arguments)
    if errors:
        raise ToolError(f"tool `{name}` got invalid arguments: {'; '.join(errors)}")
