"""What cgraph knows about providers without importing litellm: routes, keys, modes.

A litellm model name is `provider/model` (or a bare OpenAI/Anthropic model name). The
tables here answer the questions cgraph must settle before the first turn: is the route
one cgraph can talk to over HTTP, is its key in the environment, and in which order should
the structured-output modes be tried.
"""

from __future__ import annotations

import logging
import os
from functools import cache
from typing import Any, Literal
from urllib.parse import urlparse

from cgraph.errors import ConfigError

Mode = Literal["json_schema", "tool", "json_object"]
MODES: tuple[Mode, ...] = ("json_schema", "tool", "json_object")

# Where a provider keeps its key; a provider missing here is asked of litellm.
KEYS = {
    "openai": "OPENAI_API_KEY",
    "anthropic": "ANTHROPIC_API_KEY",
    "gemini": "GEMINI_API_KEY",
    "groq": "GROQ_API_KEY",
    "mistral": "MISTRAL_API_KEY",
    "deepseek": "DEEPSEEK_API_KEY",
    "openrouter": "OPENROUTER_API_KEY",
    "together_ai": "TOGETHERAI_API_KEY",
}
# Bare model names litellm places without a prefix.
BARE = {"gpt": "openai", "o1": "openai", "o3": "openai", "o4": "openai", "claude": "anthropic"}
# Servers on the user's machine: no key, and a timeout means the server is still busy.
LOCAL_ROUTES = frozenset({"ollama", "ollama_chat", "lm_studio", "llamafile", "hosted_vllm"})
# OpenAI-compatible servers: most accept `json_schema`; some answer 500 and need a tool.
OPENAI_COMPATIBLE = frozenset({"openai", "hosted_vllm", "lm_studio", "llamafile", "custom_openai"})
TOOL_FIRST = frozenset({"anthropic", "bedrock", "vertex_ai", "vertex_ai_beta", "gemini"})
# Routes litellm has that are not HTTP servers cgraph should offer.
NOT_SERVER_ROUTES = {
    "vllm": "`vllm/` loads the model inside this process; for a vLLM server use "
    "`hosted_vllm/<model>` with --api-base http://HOST:8000/v1",
    "openai_like": "`openai_like/` is not a chat route litellm serves; for an "
    "OpenAI-compatible server use `openai/<model>` with --api-base URL",
}
LOOPBACK = frozenset({"localhost", "127.0.0.1", "::1", "0.0.0.0"})


def provider_of(name: str) -> str:
    """The provider part of a litellm name (`openai/x` → openai, `gpt-4o` → openai)."""
    if "/" in name:
        return name.split("/", 1)[0]
    return BARE.get(name.split("-", 1)[0], "")


def check_route(name: str) -> None:
    """Raise `ConfigError` for a route that is not a server cgraph can talk to."""
    reason = NOT_SERVER_ROUTES.get(provider_of(name))
    if reason is not None:
        raise ConfigError(f"model `{name}`: {reason}")


def key_variable(name: str, api_base: str | None) -> str | None:
    """The environment variable the model's key is read from, None when it needs none
    (a local route, or any server named by `api_base`) or cgraph does not know it."""
    provider = provider_of(name)
    if api_base or provider in LOCAL_ROUTES:
        return None
    return KEYS.get(provider)


def is_local(name: str, api_base: str | None) -> bool:
    """A server on this machine: a timeout there means it is still generating."""
    if provider_of(name) in LOCAL_ROUTES and not api_base:
        return True
    host = urlparse(api_base).hostname if api_base else None
    return host in LOOPBACK


def mode_order(provider: str, schema: bool, tools: bool, api_base: str | None) -> tuple[Mode, ...]:
    """The modes `auto` tries, best first: what the provider is known to accept leads,
    the others follow once each in case the server refuses it."""
    if provider in TOOL_FIRST:
        first: Mode = "tool"
    elif schema or provider in OPENAI_COMPATIBLE or (api_base and not provider):
        first = "json_schema"
    elif tools:
        first = "tool"
    else:
        first = "json_object"
    return (first, *(m for m in MODES if m != first))


def env_has(variable: str) -> bool:
    return bool(os.environ.get(variable))


@cache
def load_litellm() -> Any:
    """litellm, imported and quietened once (each `setLevel` clears every logger's cache)."""
    # Never fetch the model cost map from the network at import time.
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    from cgraph.backends.embed import heavy_import_lock

    with heavy_import_lock:
        import litellm

    litellm.suppress_debug_info = True  # our errors say what failed; no links on the terminal
    litellm.set_verbose = False  # type: ignore[attr-defined]
    # litellm logs every call at INFO (6 lines a call in a server's log): warnings only.
    for name in ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy", "httpx"):
        logging.getLogger(name).setLevel(logging.WARNING)
    return litellm
