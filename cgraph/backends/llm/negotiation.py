"""How a model's requests are sent, as a session learns what its server takes: the
structured-output mode (in `auto`, first what the provider is known to accept, then the
next one when the server refuses it or answers a forced call in prose) and whether the
server accepts only a leading system message. Each change is said once (`notices`).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from typing import Any

from cgraph.backends.llm.failures import Failure
from cgraph.backends.llm.providers import Mode, load_litellm, mode_order, provider_of
from cgraph.backends.llm.responses import prose
from cgraph.spec.model import Structured


class Negotiation:
    """What one model's session chose of how to send its requests (`LiteLLMModel`), and
    what to tell the user of it."""

    def __init__(
        self, name: str, api_base: str | None, structured: Structured, one_system: bool
    ) -> None:
        self.name, self.api_base = name, api_base
        self.structured, self.one_system = structured, one_system
        self.order: tuple[Mode, ...] | None = None
        """The modes left to try, the one in use first (in `auto`, detected when first
        asked for)."""
        self._notices: list[str] = []
        self._said_prose = False

    def mode(self) -> Mode:
        """How the schema is sent now: `json_schema`, `tool` or `json_object`."""
        return self._order()[0]

    def _order(self) -> tuple[Mode, ...]:
        if self.order is None:
            structured = self.structured
            self.order = (
                detected(self.name, self.api_base) if structured == "auto" else (structured,)
            )
        return self.order

    def adapt(self, failure: Failure) -> bool:
        """Change how requests are sent after a refusal; False when nothing is left to try."""
        if failure.meaning == "system" and not self.one_system:
            self.one_system = True
            self._notices.append(
                "the server accepts only a leading system message; sending one from now on "
                f"({failure.cause})"
            )
            return True
        order = self._order()
        if failure.meaning != "rejected" or self.structured != "auto" or len(order) < 2:
            return False
        self.order = order[1:]
        self._notices.append(
            f"the server refused `{order[0]}` structured output ({failure.cause}); "
            f"using `{order[1]}` for the rest of the session"
        )
        return True

    def forced_call_ignored(self, mode: Mode, response: Any) -> bool:
        """A server that takes a forced tool call and answers in prose (llama.cpp's own
        server does): in `auto`, move to the next mode and say so (True: ask again);
        with the mode chosen explicitly, say once what to use instead."""
        if mode != "tool" or not prose(response):
            return False
        order = self._order()
        if self.structured == "auto" and len(order) > 1 and order[0] == "tool":
            self.order = order[1:]
            self._notices.append(
                "the server took a forced tool call (`tool` structured output) and answered "
                f"in prose instead; using `{order[1]}` for the rest of the session"
            )
            return True
        if not self._said_prose:
            self._said_prose = True
            self._notices.append(
                "the server took a forced tool call (`--structured tool`) and answered in "
                "prose instead, so its answers cannot be read; use `--structured "
                "json_schema` (or `auto`)"
            )
        return False

    def notices(self) -> tuple[str, ...]:
        """What the user should hear once (a mode the server refused); then forgotten."""
        found, self._notices = self._notices, []
        return tuple(found)


@lru_cache(maxsize=256)
def detected(name: str, api_base: str | None) -> tuple[Mode, ...]:
    """The modes to try for a model, in order, from what litellm's tables know of it: the
    same for every session of the model, so asked once per process (a server starts a
    session a second; litellm's lookups cost more than the turn's own work)."""
    litellm = load_litellm()
    try:
        _, provider, _, _ = litellm.get_llm_provider(name, api_base=api_base)
    except Exception:  # an unknown provider only means no capability is known for it
        provider = provider_of(name)
    schema = _supports(litellm.supports_response_schema, name, provider)
    tools = _supports(litellm.supports_function_calling, name, provider)
    return mode_order(provider, schema, tools, api_base)


def _supports(check: Callable[..., bool], model: str, provider: str) -> bool:
    try:
        return bool(check(model=model, custom_llm_provider=provider or None))
    except Exception:  # litellm raises for models missing from its map: assume "no"
        return False
