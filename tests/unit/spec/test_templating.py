"""The bounded renderer: types kept, every failure one `RenderError`, every render budgeted."""

from __future__ import annotations

import contextlib
import threading
import time
import tracemalloc
from typing import Any

import pytest

from cgraph.errors import CgraphError, RenderError
from cgraph.spec.deadline import DeadlineExceeded, deadline
from cgraph.spec.limits import MAX_VALUE_CHARS
from cgraph.spec.templating import render_text, render_value

CONTEXT: dict[str, Any] = {"name": "Ada", "flags": ["a"], "n": 3, "big": "x" * 600_000}
LOOP = "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}"


def failure(source: str, native: bool = False, seconds: float = 0.3) -> RenderError:
    render = render_value if native else render_text
    with pytest.raises(RenderError) as caught:
        render(source, CONTEXT, seconds=seconds)
    assert caught.value.template == source
    assert isinstance(caught.value, CgraphError)
    return caught.value


def test_values_keep_their_python_type_and_text_is_text() -> None:
    assert render_value("{{ flags + ['x'] }}", CONTEXT) == ["a", "x"]
    assert render_value("{{ n + 1 }}", CONTEXT) == 4
    assert render_value("{{ {'k': n} }}", CONTEXT) == {"k": 3}
    assert render_text("Hi {{ name }}, {{ n * 2 }}", CONTEXT) == "Hi Ada, 6"
    assert render_text("no template", CONTEXT) == "no template"
    assert render_value(7, CONTEXT) == 7


@pytest.mark.parametrize(
    ("source", "cause"),
    [
        ("{{ 1/0 }}", "ZeroDivisionError"),
        ("{{ missing }}", "UndefinedError"),
        ("{{ name", "TemplateSyntaxError"),
        ("{{ ''.__class__.__mro__ }}", "SecurityError"),
        ("{{ flags.append(flags) }}", "SecurityError"),  # no circular list
        ("{% macro f(n) %}{{ f(n) }}{% endmacro %}{{ f(1) }}", "RecursionError"),
        ("{{ range(10**9) | list }}", "OverflowError"),
    ],
)
@pytest.mark.parametrize("native", [False, True])
def test_every_failure_is_one_render_error_naming_the_template_and_cause(
    source: str, cause: str, native: bool
) -> None:
    error = failure(source, native)
    assert error.cause == cause
    assert repr(source[:40])[:-1] in error.message


@pytest.mark.parametrize(
    "source",
    [
        "{{ 'a' * 10**9 }}",
        "{{ [1] * 10**9 }}",
        "{{ 10**(10**9) }}",
        "{{ 10**5000 }}",
        "{{ big + big }}",
        "{{ big ~ big }}",
        "{{ 'ab' | replace('', big) }}",
        "{{ 'x' | center(10**9) }}",
        "{{ '%999999999d' % 1 }}",
        "{{ '{:>999999999}'.format(1) }}",
        "{{ range(1000) | join(big) }}",
        "{{ big | wordwrap(1) }}",
        "{% set ns = namespace(s='ab') %}{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}"
        "{% endfor %}{{ ns.s }}",
        "{% for i in range(100000) %}{% for j in range(100) %}xx{% endfor %}{% endfor %}",
    ],
)
@pytest.mark.parametrize("native", [False, True])
def test_values_over_the_size_limit_are_refused_before_they_are_built(
    source: str, native: bool
) -> None:
    assert failure(source, native, seconds=5).cause == "LimitExceeded"


def test_a_value_is_held_to_the_limit_as_a_whole() -> None:
    lists = {"parts": ["y" * 1000] * (MAX_VALUE_CHARS // 1000)}
    with pytest.raises(RenderError, match="over 1,000,000 characters"):
        render_value("{{ parts }}", lists)


@pytest.mark.parametrize("native", [False, True])
def test_a_render_that_runs_too_long_stops_at_its_deadline(native: bool) -> None:
    start = time.monotonic()
    assert failure(LOOP, native, seconds=0.2).cause == "timeout"
    assert time.monotonic() - start < 2


def test_the_deadline_works_off_the_main_thread() -> None:
    caught: list[BaseException] = []

    def work() -> None:
        try:
            render_text(LOOP, CONTEXT, seconds=0.2)
        except RenderError as err:
            caught.append(err)

    worker = threading.Thread(target=work)
    worker.start()
    worker.join(timeout=10)
    assert not worker.is_alive()
    assert [getattr(e, "cause", None) for e in caught] == ["timeout"]


def test_a_finished_render_leaves_no_deadline_behind() -> None:
    for _ in range(50):
        render_text("{{ name }}", CONTEXT, seconds=0.2)
    time.sleep(0.4)  # every deadline above is past: none may fire now
    assert render_text("{{ name }}", CONTEXT) == "Ada"


def test_deadlines_in_two_threads_stop_only_their_own_thread() -> None:
    results: dict[str, str] = {}

    def slow() -> None:
        try:
            render_text(LOOP, CONTEXT, seconds=0.2)
        except RenderError as err:
            results["slow"] = err.cause

    def quick() -> None:
        for _ in range(500):
            render_text("{{ name }}", CONTEXT, seconds=5)
        results["quick"] = "done"

    threads = [threading.Thread(target=slow), threading.Thread(target=quick)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=20)
    assert results == {"slow": "timeout", "quick": "done"}


def test_a_deadline_cannot_be_caught_by_the_code_it_stops() -> None:
    with pytest.raises(DeadlineExceeded), deadline(0.05):
        while True:
            with contextlib.suppress(Exception):  # what a careless handler would write
                time.sleep(0.001)


def test_a_compiled_template_renders_under_the_same_budget() -> None:
    from jinja2 import DictLoader

    from cgraph.spec.sandbox import BoundedSandbox
    from cgraph.spec.templating import render_template

    env = BoundedSandbox(loader=DictLoader({"ok.j2": "Hi {{ name }}", "slow.j2": LOOP}))
    assert render_template(env.get_template("ok.j2"), CONTEXT) == "Hi Ada"
    with pytest.raises(RenderError) as caught:
        render_template(env.get_template("slow.j2"), CONTEXT, seconds=0.2)
    assert (caught.value.template, caught.value.cause) == ("slow.j2", "timeout")


def test_a_lone_expression_keeps_its_type_and_text_stays_text() -> None:
    assert render_value("{{ amount }}", {"amount": 150}) == 150
    assert render_value("{{ amount }}", {"amount": "150"}) == "150"
    assert render_value("{{ true }}", {}) is True
    assert render_value("{{ flags + ['x'] }}", {"flags": []}) == ["x"]
    assert render_value("{{ amount }} dollars", {"amount": 150}) == "150 dollars"


def test_a_lone_name_is_its_value_and_jinja_s_constants_stay_constants() -> None:
    # `{{ message }}` is read without rendering: the same value Jinja would give.
    memories = [{"text": "a"}]
    assert render_value("{{ message }}", {"message": memories}) is memories
    assert render_value("{{- n -}}", {"n": None}) is None
    assert render_value("{{ none }}", {"none": 5}) is None
    assert render_value("{{ True }}", {"True": 5}) is True
    assert render_value("{{ range }}", {"range": 5}) == 5  # the context hides a global
    with pytest.raises(RenderError) as caught:
        render_value("{{ missing }}", {})
    assert (caught.value.cause, str(caught.value)) == (
        "UndefinedError",
        "template '{{ missing }}' failed: UndefinedError: 'missing' is undefined",
    )
    with pytest.raises(RenderError) as caught:
        render_value("{{ not }}", {"not": 1})
    assert caught.value.cause == "TemplateSyntaxError"


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("{{ 1 2 }}", "TemplateSyntaxError: chunk after expression"),
        ("{{ n + }}", "TemplateSyntaxError: unexpected 'end of template'"),
        ("{{ n | nofilter }}", "TemplateAssertionError: No filter named 'nofilter'."),
    ],
)
def test_an_expression_that_does_not_compile_says_why_in_one_line(
    source: str, message: str
) -> None:
    with pytest.raises(RenderError) as caught:
        render_value(source, CONTEXT)
    assert str(caught.value) == f"template {source!r} failed: {message}"


def test_the_sandbox_s_verdict_on_one_attribute_does_not_carry_to_another() -> None:
    # Verdicts are kept per type and name: a safe read must not open a mutating call.
    context = {"flags": ["a"], "marks": {"k": 1}}
    for _ in range(2):
        assert render_value("{{ flags.index('a') }}", context) == 0
        assert render_value("{{ marks.keys() | list }}", context) == ["k"]
        for source in ("{{ flags.append('b') }}", "{{ marks.clear() }}"):
            with pytest.raises(RenderError) as caught:
                render_value(source, context)
            assert caught.value.cause == "SecurityError"
    assert context == {"flags": ["a"], "marks": {"k": 1}}


@pytest.mark.parametrize(
    ("source", "why"),
    [
        ("{{ '\\ud800' }}", "a lone surrogate (U+D800) at character 1"),
        (
            "{{ ['ok', {'k': 'a\\udcff'}] }}",
            "a byte that is not UTF-8 (0xff) at character 2 (at 1.k)",
        ),
        ("{{ {(1, 2): 3} }}", "a key that is a tuple"),
        ("{{ {'a': {1: [{(1,): 2}]}} }}", "a key that is a tuple (at a.1.0)"),
        ("{{ ('n' ~ 'an' * x[0]) | float }}", "the number nan"),
        ("{{ x | unique }}", "a generator, not JSON data"),
        ("{{ x ~ '\\udfff' }}", "a lone surrogate (U+DFFF)"),
    ],
)
def test_a_value_that_cannot_be_stored_fails_its_render(source: str, why: str) -> None:
    with pytest.raises(RenderError) as failed:
        render_value(source, {"x": [1, 2]})
    assert failed.value.cause == "NotStorable"
    assert why in failed.value.message


@pytest.mark.parametrize("source", ["{{ '\\ud800' }}", "hi {{ 'a\\udcff' }}"])
def test_text_that_cannot_be_stored_fails_its_render(source: str) -> None:
    with pytest.raises(RenderError) as failed:
        render_text(source, {})
    assert failed.value.cause == "NotStorable"


def test_storable_values_render_as_before() -> None:
    value = render_value("{{ {'a': [1, 2.5, none, true, 'é'], 1: 'int keys are JSON'} }}", {})
    assert value == {"a": [1, 2.5, None, True, "é"], 1: "int keys are JSON"}


AMPLIFIERS = [
    "{{ '%*d' | format(999999999, 1) }}",
    "{{ '%.*f' | format(999999999, 1.0) }}",
    "{{ '%-*.*s' % (999999999, 5, 'a') }}",
    "{{ ('%999999d' * 100) % ((1,) * 100) }}",
    "{{ ('%999999d' * 100) | format(*((1,) * 100)) }}",
    "{{ ('%(a)s' * 1000) | format(a='x' * 999999) }}",
    "{{ ('{:999999}' * 100).format(*((1,) * 100)) }}",
    "{{ ('{:.999999f}' * 100).format(*((1.5,) * 100)) }}",
    "{{ ('{0}' * 1000).format('x' * 999999) }}",
    "{{ ('{0:{1}}' * 100).format(1, 999999) }}",
    "{{ ('{x}' * 1000).format_map({'x': 'y' * 999999}) }}",
    "{{ ('a\\n' * 1000) | indent('x' * 500000) }}",
    "{{ ([[[[1]]]] * 1000) | tojson(indent=999999) }}",
    "{{ ([[[[1]]]] * 1000) | tojson(indent='x' * 99999) }}",
    "{{ [1] | batch(999999999, 'x') | list | length }}",
    "{{ range(1) | slice(999999999) | list | length }}",
    "{{ ('x ' * 400000) | wordwrap(1) }}",
    "{{ range(1000) | map('string') | map('center', 999999) | list | length }}",
]


@pytest.mark.parametrize("source", AMPLIFIERS)
def test_a_width_or_count_is_refused_before_the_value_is_built(source: str) -> None:
    tracemalloc.start()
    try:
        with pytest.raises(RenderError) as failed:
            render_text(source, {"x": [1, 2]}, seconds=30)  # the size checks, not the time
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert failed.value.cause == "LimitExceeded", failed.value.message
    assert peak < 40_000_000  # a few values of the limit at most, never the product


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("{{ '%*d|%-5s|%.2f' % (4, 7, 'ab', 3.14159) }}", "   7|ab   |3.14"),
        ("{{ '%(a)s=%(b)05d' | format(a='n', b=42) }}", "n=00042"),
        ("{{ '{:>6}|{:{}}|'.format('a', 'b', 3) }}", "     a|b  |"),
        ("{{ '%*d' % (5, 10**7) }}", "10000000"),
        ("{{ 'a\\nb' | indent('> ', first=true) }}", "> a\n> b"),
        ("{{ [1, [2]] | tojson(indent=2) }}", "[\n  1,\n  [\n    2\n  ]\n]"),
        ("{{ [1, 2, 3] | batch(2, 0) | list | tojson }}", "[[1, 2], [3, 0]]"),
    ],
)
def test_formats_and_widths_within_the_limits_render_as_before(source: str, expected: str) -> None:
    assert render_text(source, {}) == expected
