"""The one model-resolution function: entries, options, checks before the first turn."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from cgraph.backends.llm.litellm_chat import LiteLLMModel
from cgraph.backends.llm.scripted import ScriptedModel
from cgraph.errors import ConfigError, UnknownModel
from cgraph.runtime.ports import Capabilities, LLMRequest, Quiet
from cgraph.spec.model import ModelConfig
from cgraph.wiring import models as registry
from cgraph.wiring.models import choose, has_credentials, register, resolve_model


class Echo(Quiet):
    """A backend registered from outside cgraph."""

    capabilities = Capabilities()

    def __init__(self, rest: str, **options: Any) -> None:
        self.name, self.options = f"echo:{rest}", options

    def complete(self, request: LLMRequest) -> str:
        return "{}"


def test_a_registered_prefix_resolves_with_the_graphs_settings() -> None:
    register("echo", Echo)
    try:
        model = resolve_model("echo:hello", ModelConfig(temperature=0.7), retries=1)
    finally:
        registry._REGISTERED.pop("echo")
    assert isinstance(model, Echo) and model.name == "echo:hello"
    assert model.options["temperature"] == 0.7 and model.options["retries"] == 1
    assert model.options["structured"] == "auto"


@pytest.mark.slow
def test_litellm_is_the_entry_for_every_other_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    config = ModelConfig(timeout=9.0, structured="tool", api_base="http://127.0.0.1:1/v1")
    model = resolve_model("openai/local", config, max_tokens=32, timeout=None)
    assert isinstance(model, LiteLLMModel) and model.name == "openai/local"
    assert (model.timeout, model.max_tokens, model.structured) == (9.0, 32, "tool")
    assert model.api_base == "http://127.0.0.1:1/v1"
    explicit = resolve_model("litellm:openai/local", config)
    assert isinstance(explicit, LiteLLMModel) and explicit.name == "openai/local"


def test_names_without_a_model_and_objects(tmp_path: Path) -> None:
    script = tmp_path / "s.yaml"
    script.write_text("'*': {exit: stay, reason: r, reply: hi}\n")
    assert isinstance(resolve_model(f"scripted:{script}"), ScriptedModel)
    given = ScriptedModel({})
    assert resolve_model(given, ModelConfig(name="gpt-4o")) is given


def test_an_unknown_name_lists_the_valid_ones() -> None:
    with pytest.raises(UnknownModel) as caught:
        resolve_model("nosuchprovider/x")
    message = caught.value.message
    assert "unknown model `nosuchprovider/x`" in message
    assert "semantic, replay:FILE, scripted:FILE, or a litellm model" in message


def test_a_missing_key_is_found_before_the_first_turn(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(
        ConfigError, match=r"needs an API key: set ANTHROPIC_API_KEY \(or pass --api-base\)"
    ):
        resolve_model("anthropic/claude-3-5-haiku-latest")


@pytest.mark.parametrize("name", ["vllm/facebook/opt-125m", "openai_like/x"])
def test_routes_that_are_not_servers_are_refused(name: str) -> None:
    with pytest.raises(ConfigError, match=r"for an? .*server use"):
        resolve_model(name, api_base="http://127.0.0.1:8000/v1")


def test_model_choice(monkeypatch: pytest.MonkeyPatch) -> None:
    config = ModelConfig(name="gpt-4o")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert choose(None, config) == "semantic"
    assert choose("ollama/llama3.2", config) == "ollama/llama3.2"
    assert not has_credentials("gpt-4o-mini")
    assert has_credentials("ollama/llama3.2") and has_credentials("semantic")
    assert has_credentials("openai/local-model", api_base="http://127.0.0.1:8080/v1")
    assert choose(None, replace(config, api_base="http://127.0.0.1:8080/v1")) == "gpt-4o"
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    assert has_credentials("gpt-4o-mini") and choose(None, config) == "gpt-4o"


def test_the_structured_flag_and_the_modes_follow_the_model() -> None:
    from typing import get_args

    from cgraph.backends.llm.providers import MODES
    from cgraph.cli.app import StructuredMode
    from cgraph.spec.model import Structured

    assert [m.value for m in StructuredMode] == list(get_args(Structured))
    assert ["auto", *MODES] == list(get_args(Structured))
