"""The offline chooser's lexicon: every word list, pattern and dialogue act, loaded once
from `lexicon.yaml` into one value (`LEXICON`).

The modules that read a message (`reading`, `options`, `words`, `features`) read the
lexicon's entries by the names the file gives them (`LEXICON.YES`, `LEXICON.LEADING_NO`);
a name the file does not hold is an error that lists the names it does. A list changed in
the file changes a feature, so the scorer is fitted again afterwards
(`bench/fit_chooser.py`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from importlib.resources import files
from typing import Any

import yaml

from cgraph.errors import CgraphError

PACKAGED = "lexicon.yaml"


@dataclass(frozen=True, slots=True)
class Act:
    """A dialogue act: how a designer describes it, how users say it. An exit whose
    description is this close to the act's (`floor`, None: the calibration's `act_floor`)
    is also matched on the act's examples: how users say it. A graph declares its own
    (`acts:`, `spec.model.DialogueAct`)."""

    description: str
    examples: tuple[str, ...]
    negative: bool = False
    """Lent only to an exit whose description denies or refuses something: embeddings
    cannot tell "reports a danger" from "says there is no danger"."""
    floor: float | None = None
    name: str = ""


@dataclass(frozen=True, slots=True)
class Lexicon:
    """Every list, map and pattern by its name, and the dialogue acts every conversation
    shares. Read an entry as an attribute: `LEXICON.YES`."""

    lists: Mapping[str, tuple[str, ...]]
    maps: Mapping[str, Mapping[str, str]]
    patterns: Mapping[str, re.Pattern[str]]
    acts: tuple[Act, ...] = ()
    stop_words: frozenset[str] = field(default=frozenset())

    def __getattr__(self, name: str) -> Any:
        for table in (self.patterns, self.lists, self.maps):
            if name in table:
                return table[name]
        known = sorted({*self.patterns, *self.lists, *self.maps})
        raise AttributeError(f"the lexicon has no {name!r}; it has {', '.join(known)}")

    @property
    def STOP_WORDS(self) -> frozenset[str]:
        return self.stop_words

    @property
    def ORDINALS(self) -> dict[str, int]:
        return {word: int(index) for word, index in self.maps["ORDINALS"].items()}

    @property
    def ACTS(self) -> tuple[Act, ...]:
        return self.acts


def alternation(words: Sequence[str]) -> str:
    """The words as one alternation, longest first (so "no thanks" wins over "no"); an
    apostrophe may be typographic or left out ("don't", "don’t", "dont")."""
    escaped = (re.escape(w).replace("'", "['’]?") for w in sorted(words, key=len, reverse=True))
    return "|".join(escaped)


def acts_of(data: Mapping[str, Any], where: str) -> tuple[Act, ...]:
    """Dialogue acts from their YAML form (name → description, examples, negative,
    floor), every scalar a string or not."""
    found = []
    for name, body in data.items():
        try:
            floor = body.get("floor")
            found.append(
                Act(
                    description=str(body["description"]),
                    examples=tuple(str(u) for u in body.get("examples", ())),
                    negative=str(body.get("negative", "false")).lower() == "true",
                    floor=None if floor is None else float(floor),
                    name=str(name),
                )
            )
        except (KeyError, TypeError, ValueError, AttributeError) as err:
            raise CgraphError(f"{where}: the act {name!r} is malformed: {err}") from err
    return tuple(found)


def parse(text: str, where: str = PACKAGED) -> Lexicon:
    """A lexicon from its YAML text (see `lexicon.yaml` for the format); `CgraphError`
    naming `where` when it is malformed."""
    data = yaml.load(text, Loader=getattr(yaml, "CBaseLoader", yaml.BaseLoader))
    try:
        return _built(data, where)
    except (KeyError, TypeError, AttributeError, ValueError, re.error) as err:
        raise CgraphError(f"{where}: the lexicon is malformed: {err!r}") from err


def _built(data: dict[str, Any], where: str) -> Lexicon:
    lists = {name: tuple(words) for name, words in data["lists"].items()}
    maps = {name: dict(pairs) for name, pairs in data["maps"].items()}
    words = {**lists, **{name: tuple(pairs) for name, pairs in maps.items()}}

    def expand(pattern: str) -> str:
        def named(found: re.Match[str]) -> str:
            if found[1] not in words:
                raise CgraphError(f"{where}: a pattern names no list {found[1]!r}")
            return alternation(words[found[1]])

        return re.sub(r"\$([A-Z_]+)", named, pattern)

    patterns = {name: re.compile(expand(p), re.I) for name, p in data["patterns"].items()}
    patterns |= {name: re.compile(expand(p)) for name, p in data["exact"].items()}
    stop = frozenset(lists.pop("STOP_WORDS", ()))
    return Lexicon(lists, maps, patterns, acts_of(data["acts"], where), stop)


def with_declared(acts: tuple[Act, ...], declared: Mapping[str, Any]) -> tuple[Act, ...]:
    """`acts` with a graph's own (`spec.model.DialogueAct` by name) over them: one of the
    same name replaces a shipped act, the others are added."""
    mine = {
        name: Act(d.description, tuple(d.examples), d.negative, d.floor, name)
        for name, d in declared.items()
    }
    kept = tuple(mine.pop(act.name, act) for act in acts)
    return (*kept, *mine.values())


@cache
def packaged() -> Lexicon:
    """The lexicon shipped with cgraph."""
    return parse((files(__package__) / PACKAGED).read_text(encoding="utf-8"))


LEXICON = packaged()
