"""The size limits shared by lint, the loader and the runtime."""

from __future__ import annotations

import json
from typing import Any

import pytest

from cgraph.spec.limits import MAX_VALUE_CHARS, expanded_size, largest_part, too_large


@pytest.mark.parametrize(
    "value",
    ["text", 12345, 3.5, None, True, [1, "a", [2]], {"k": {"n": [1, 2, {"x": "y"}]}}],
)
def test_the_size_is_about_the_length_of_the_json(value: Any) -> None:
    size = expanded_size(value)
    assert len(json.dumps(value)) / 3 <= size <= len(json.dumps(value)) * 3 + 24


def test_shared_parts_count_each_time_and_counting_stops_at_the_limit() -> None:
    part: list[Any] = ["lol"] * 10
    for _ in range(12):  # 10**13 strings once expanded; a few hundred objects in memory
        part = [part] * 10
    assert expanded_size(part, 1000) == 1001
    assert too_large(part)
    # 10**5 strings (6 MB) is the innermost part over the limit: 7 levels down
    assert largest_part({"a": 1, "b": {"c": part}}) == ("b", "c", *[0] * 7)


def test_a_circular_value_is_over_any_limit() -> None:
    loop: list[Any] = [1]
    loop.append(loop)
    assert too_large(loop)
    assert not too_large([1, [2, [3]]])


def test_the_value_limit_is_a_megabyte_of_json() -> None:
    assert not too_large("x" * (MAX_VALUE_CHARS - 10))
    assert too_large("x" * MAX_VALUE_CHARS)


def test_check_size_names_the_value_and_the_part_too_large() -> None:
    from cgraph.errors import CgraphError, ValueTooLarge
    from cgraph.spec.limits import check_size

    check_size({"notes": ["short"]}, "variable `notes`")
    with pytest.raises(ValueTooLarge) as caught:
        check_size({"a": 1, "b": ["x" * MAX_VALUE_CHARS]}, "the result of tool `search`")
    assert isinstance(caught.value, CgraphError)
    assert caught.value.message == (
        "the result of tool `search` is over 1,000,000 characters at b.0"
    )
    loop: list[Any] = []
    loop.append(loop)
    with pytest.raises(ValueTooLarge):
        check_size(loop, "variable `loop`")
