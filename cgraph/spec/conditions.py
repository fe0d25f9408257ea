"""`when:` conditions: Jinja expressions over variables and slots, parsed without running.

Lint reads only the expression's syntax tree (`parse`); the runtime evaluates it in the
same sandbox as every graph template (`holds`). An expression that fails at run time
(a name still unset, a comparison of None with a number) does not hold.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from jinja2 import TemplateSyntaxError, nodes
from jinja2.parser import Parser

from cgraph.spec.templating import text_env


@lru_cache(maxsize=2048)
def parse(source: str) -> tuple[str | None, frozenset[str]]:
    """(the syntax error, or None; the names the expression reads)."""
    env = text_env()
    try:
        parser = Parser(env, source, state="variable")
        expression = parser.parse_expression()
        if not parser.stream.eos:
            token = parser.stream.current
            return f"unexpected `{token.value}` after the expression", frozenset()
    except TemplateSyntaxError as err:
        return err.message or "invalid expression", frozenset()
    names = {n.name for n in expression.find_all(nodes.Name) if n.ctx == "load"}
    return None, frozenset(names) - frozenset(env.globals)


def holds(source: str, context: Mapping[str, Any]) -> bool:
    """Whether the condition holds; an error while evaluating it means it does not."""
    try:
        return bool(_compiled(source)(**context))
    except Exception:  # an unset slot or a wrong type is "not yet", never a crash
        return False


@lru_cache(maxsize=2048)
def _compiled(source: str) -> Any:
    return text_env().compile_expression(source, undefined_to_none=False)
