"""Model names → backends: one table and the one function that resolves a name.

`semantic`, `replay:FILE` and `scripted:FILE` are entries like any other; so is
`litellm`, the entry for every name no other entry claims (`gpt-4o-mini`,
`anthropic/claude-3-5-haiku-latest`, `ollama/llama3.2`, ...). `register(prefix, factory)`
adds an entry: `prefix:REST` then resolves to `factory(REST, **options)`. An entry makes
a `ChatModel` (a language model, which the runtime's own chooser asks) or an
`ExitChooser` that reads messages itself (the offline mode); `models_of` says which parts
a session gets. The table names backends of every kind, so it lives where they are
composed, above them.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, replace
from typing import Any

from cgraph.errors import ConfigError, UnknownModel
from cgraph.runtime.ask.choosing import ModelChooser
from cgraph.runtime.ports import ChatModel, ExitChooser, Rememberer, Summariser
from cgraph.spec.model import ModelConfig

ModelFactory = Callable[..., ChatModel | ExitChooser]
SEMANTIC = "semantic"
LITELLM = "litellm"
# Entries imported only when asked for, so that light commands stay light.
_BUILTIN = {
    SEMANTIC: "cgraph.backends.offline.chooser:semantic",
    "replay": "cgraph.backends.llm.replay:replay",
    "scripted": "cgraph.backends.llm.scripted:ScriptedModel",
    LITELLM: "cgraph.backends.llm.litellm_chat:LiteLLMModel",
}
_REGISTERED: dict[str, ModelFactory] = {}
_USAGE = {SEMANTIC: SEMANTIC, "replay": "replay:FILE", "scripted": "scripted:FILE"}


def register(prefix: str, factory: ModelFactory) -> None:
    """Make `prefix:REST` model names resolve to `factory(REST, **options)`."""
    _REGISTERED[prefix] = factory


def valid_names() -> str:
    """Every form a model name may take, for error messages and help."""
    names = [*_BUILTIN, *(p for p in _REGISTERED if p not in _BUILTIN)]
    entries = [_USAGE.get(p, f"{p}:…") for p in names if p != LITELLM]
    return ", ".join(entries) + ", or a litellm model (openai/…, anthropic/…, ollama/…)"


def resolve_model(
    model: ChatModel | ExitChooser | str | None,
    config: ModelConfig | None = None,
    *,
    embedding_model: str = "",
    acts: Mapping[str, Any] | None = None,
    **overrides: Any,
) -> ChatModel | ExitChooser:
    """The backend for `model`: a `ChatModel` as given, else by name (`config.name`, else
    `semantic`), built with `config`'s settings and `overrides` (None means "not given");
    every entry receives the same options (`embedding_model` and the graph's dialogue
    `acts` are the semantic entry's).
    A provider model is checked now: an unknown name or a missing key fails before a turn."""
    if model is not None and not isinstance(model, str):
        return model
    settings = replace(
        config or ModelConfig(), **{k: v for k, v in overrides.items() if v is not None}
    )
    name = model or settings.name or SEMANTIC
    entry, rest = _entry(name)
    options = {k: v for k, v in asdict(settings).items() if k != "name"}
    options["embedding_model"] = embedding_model
    options["acts"] = dict(acts or {})
    chat = _factory(entry)(rest, **options)
    validate = getattr(chat, "validate", None)
    try:
        if callable(validate):
            validate()
    except UnknownModel as err:
        raise UnknownModel(f"{err.message}; valid names are {valid_names()}") from err
    return chat


def _entry(name: str) -> tuple[str, str]:
    """(entry, the rest of the name it receives): `replay:x` → (replay, x), `semantic` →
    (semantic, ""), `litellm:openai/x` and `openai/x` → (litellm, openai/x)."""
    prefix, colon, rest = name.partition(":")
    known = prefix in _REGISTERED or prefix in _BUILTIN
    if known and (colon or prefix == name):
        return prefix, rest
    return LITELLM, name


def _factory(entry: str) -> ModelFactory:
    registered = _REGISTERED.get(entry)
    if registered is not None:
        return registered
    module_name, _, attr = _BUILTIN[entry].partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as err:
        raise ConfigError(f"model backend `{entry}` is not available: {err}") from err
    factory: ModelFactory = getattr(module, attr)
    return factory


def has_credentials(name: str, api_base: str | None = None) -> bool:
    """True when `name` can run here: not a provider model, a local server, or a provider
    whose key is in the environment (litellm is asked only about providers cgraph does
    not know)."""
    from cgraph.backends.llm.providers import LOCAL_ROUTES, env_has, key_variable, provider_of

    entry, _ = _entry(name)
    provider = provider_of(name)
    if entry != LITELLM or api_base or provider in LOCAL_ROUTES:
        return True
    variable = key_variable(name, api_base)
    if variable is not None:
        return env_has(variable)
    try:
        from cgraph.backends.llm.providers import load_litellm

        found: Mapping[str, Any] = load_litellm().validate_environment(model=name)
        return bool(found.get("keys_in_environment"))
    except Exception:  # a name litellm cannot place has no known keys
        return False


def choose(given: str | None, config: ModelConfig) -> str:
    """`--model`, else the graph's model when it can run here, else `semantic`."""
    if given:
        return given
    wanted = config.name
    if wanted and has_credentials(wanted, config.api_base):
        return wanted
    return SEMANTIC


@dataclass(frozen=True, slots=True)
class Models:
    """What a session chooses and talks with: an `ExitChooser`, and the language model
    behind it (None offline, where the chooser also picks what to remember)."""

    chooser: ExitChooser
    chat: ChatModel | None
    rememberer: Rememberer | None
    summariser: Summariser
    """Writes the running summary when `chat` writes none (offline) or fails to."""


def models_of(made: ChatModel | ExitChooser) -> Models:
    """A session's models: a chooser that reads messages itself, or a language model asked
    through the runtime's own chooser."""
    from cgraph.backends.offline.summary import ExtractiveSummariser

    if isinstance(made, ExitChooser):
        rememberer = made if isinstance(made, Rememberer) else None
        return Models(made, None, rememberer, ExtractiveSummariser())
    return Models(ModelChooser(made), made, None, ExtractiveSummariser())
