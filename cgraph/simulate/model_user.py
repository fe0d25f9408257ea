"""The model user (`--user model`): a persona played by any litellm model.

Persona, goal and facts go in one system prompt (reveal one thing at a time, never invent,
stop only once the agent has done what was asked); the conversation so far follows with
the roles turned round (the agent speaks as `user`, the persona answers as `assistant`).
Temperature 0, the run's seed passed on and recorded as honoured or not (whether the
provider takes `seed`). Every request is cached by the hash of its content in the results
folder (`requests.jsonl`), so `--replay` reruns a simulation with no call at all; a request
not in the cache under `--replay` stops the simulation (`CacheMiss`). Judged `criteria:`
are asked of the same model after the run, yes or no, and cached alike.
"""

from __future__ import annotations

import hashlib
import json
import random
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cgraph.errors import CgraphError, ConfigError
from cgraph.simulate.options import BudgetSpent, CacheMiss, Options
from cgraph.simulate.run import User
from cgraph.simulate.user import Line
from cgraph.spec.model import Graph
from cgraph.spec.simfile import Persona, SimFile

DONE = "[done]"
"""What the model says once the agent has done what it asked: the user says no more."""
CACHE = "requests.jsonl"
MAX_TOKENS = 200
OPENING = "(The conversation begins: write your first message.)"


class RequestCache:
    """Answers by the SHA-256 of the request's canonical JSON, kept in a JSON-lines file
    that every process of a simulation appends to."""

    def __init__(self, path: Path, replay: bool) -> None:
        self.path, self.replay = path, replay
        self._lock = threading.Lock()
        self._answers: dict[str, dict[str, Any]] = {}
        if path.exists():
            for text in path.read_text(encoding="utf-8").splitlines():
                try:
                    entry = json.loads(text)
                    self._answers[entry["key"]] = entry["answer"]
                except (ValueError, KeyError, TypeError):
                    continue  # a line a stopped process left half written

    @staticmethod
    def key(request: Mapping[str, Any]) -> str:
        canonical = json.dumps(request, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
        return hashlib.sha256(canonical.encode()).hexdigest()

    def get(self, request: Mapping[str, Any]) -> dict[str, Any] | None:
        return self._answers.get(self.key(request))

    def put(self, request: Mapping[str, Any], answer: dict[str, Any]) -> None:
        key = self.key(request)
        with self._lock:
            self._answers[key] = answer
            with self.path.open("a", encoding="utf-8") as out:
                out.write(json.dumps({"key": key, "answer": answer}, ensure_ascii=False) + "\n")


@dataclass
class Counter:
    """Model calls made by this process, held to `--budget calls=N`."""

    budget: int | None = None
    calls: int = 0

    def spend(self) -> None:
        if self.budget is not None and self.calls >= self.budget:
            raise BudgetSpent(f"--budget: {self.budget} model calls spent")
        self.calls += 1


@dataclass
class Caller:
    """Sends a request through litellm (or answers it from the cache)."""

    model: str
    cache: RequestCache
    counter: Counter
    complete: Callable[..., Any] | None = None
    """litellm's `completion` (loaded on the first call that is no cache hit)."""

    def __call__(self, request: dict[str, Any]) -> tuple[str, int, bool]:
        """(text, tokens, whether a call was made)."""
        cached = self.cache.get(request)
        if cached is not None:
            return str(cached["text"]), int(cached.get("tokens", 0)), False
        if self.cache.replay:
            raise CacheMiss(
                f"--replay: no cached answer for a request to `{self.model}` "
                f"({self.cache.key(request)[:12]}); run once without --replay to record it"
            )
        self.counter.spend()
        if self.complete is None:
            from cgraph.backends.llm.providers import load_litellm

            self.complete = load_litellm().completion
        try:
            response = self.complete(**request)
            text = response.choices[0].message.content or ""
            usage = getattr(response, "usage", None)
            tokens = int(getattr(usage, "total_tokens", 0) or 0)
        except CgraphError:
            raise
        except Exception as err:  # a provider's own error types: one located message
            raise ConfigError(f"the user model `{self.model}` failed: {err}") from err
        self.cache.put(request, {"text": text, "tokens": tokens})
        return text, tokens, True


@dataclass
class ModelUser:
    """One run's persona, played by a model."""

    persona: Persona
    graph: Graph
    caller: Caller
    seed: int
    seed_honoured: bool | None
    talk: list[tuple[str, str]] = field(default_factory=list)
    """The conversation as the model sees it: the agent as `user`, the persona as
    `assistant`."""
    calls: int = 0
    tokens: int = 0

    def next_line(self, state: str, variables: Mapping[str, Any], reached: set[str]) -> Line:
        text, tokens, called = self.caller(self.request())
        self.calls += called
        self.tokens += tokens
        text = text.strip()
        if not text or DONE in text.lower():
            return Line("", None, "lost")  # done, or nothing to say: the user stops
        self.talk.append(("assistant", text))
        return Line(text, None, "model")

    def hear(self, reply: str) -> None:
        self.talk.append(("user", reply or "(no reply)"))

    def request(self) -> dict[str, Any]:
        talk = (
            self.talk
            if self.talk and self.talk[0][0] == "user"
            else [("user", OPENING), *self.talk]
        )
        messages = [{"role": "system", "content": system_prompt(self.persona, self.graph)}]
        messages += [{"role": role, "content": text} for role, text in talk]
        request: dict[str, Any] = {
            "model": self.caller.model,
            "messages": messages,
            "temperature": 0,
            "max_tokens": MAX_TOKENS,
        }
        if self.seed_honoured:
            request["seed"] = self.seed
        return request

    def judge(self, transcript: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """Each criterion of the persona, judged yes or no on the transcript."""
        lines = "\n".join(f"User: {t['user']}\nAgent: {t['reply']}" for t in transcript)
        verdicts = []
        for criterion in self.persona.criteria:
            prompt = (
                "You judge a finished conversation between a user and an agent. Answer "
                f"only yes or no.\n\nConversation:\n{lines}\n\nCriterion: {criterion}"
            )
            request = {
                "model": self.caller.model,
                "messages": [{"role": "user", "content": prompt}],
                "temperature": 0,
                "max_tokens": 5,
            }
            text, tokens, called = self.caller(request)
            self.calls += called
            self.tokens += tokens
            verdicts.append({"criterion": criterion, "met": text.strip().lower().startswith("yes")})
        return verdicts


def system_prompt(persona: Persona, graph: Graph) -> str:
    """The one system prompt a model user gets: who it is, what it wants, what it knows."""
    goals = [_objective(graph, s) for s in persona.goal.reach]
    avoid = [_objective(graph, s) for s in persona.goal.never]
    facts = "\n".join(f"- {k}: {v}" for k, v in persona.facts.items()) or "- (none)"
    parts = [
        f"You play a user talking to {graph.agent.name}, an assistant: {graph.description}",
        f"You are: {persona.name}.",
        "What you want: " + ("; ".join(goals) if goals else "to get what you came for") + ".",
        *(["What must not happen: " + "; ".join(avoid) + "."] if avoid else []),
        f"What you know, to give only when asked:\n{facts}",
        "Reveal one thing at a time. Never invent facts you were not given. Write only your "
        "next message, as the user would type it. Once the assistant has done what you "
        f"asked, and only then, answer exactly {DONE}.",
    ]
    return "\n\n".join(parts)


def _objective(graph: Graph, state: str) -> str:
    spec = graph.states.get(state)
    return spec.objective if spec is not None else state


def model_users(
    sim: SimFile, graph: Graph, options: Options, folder: Path
) -> Callable[[Persona, random.Random], User]:
    """The factory of a sim file's model users, sharing one cache and one budget."""
    if not sim.user_model:
        raise ConfigError("--user model needs a model: --model NAME or `user_model:` in the file")
    cache = RequestCache(folder / CACHE, options.replay)
    caller = Caller(sim.user_model, cache, Counter(options.budget_calls))
    honoured = _takes_seed(sim.user_model)

    def make(persona: Persona, rng: random.Random) -> User:
        return ModelUser(persona, graph, caller, rng.randrange(2**31), honoured)

    return make


def _takes_seed(model: str) -> bool:
    """Whether the provider takes `seed` (litellm's table of each provider's parameters)."""
    from cgraph.backends.llm.providers import load_litellm

    try:
        supported = load_litellm().get_supported_openai_params(model=model) or []
    except Exception:  # an unknown provider: the seed is not sent
        return False
    return "seed" in supported
