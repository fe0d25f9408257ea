"""What a message is, read from its words: the cues the chooser's features are made of.

Sentence embeddings carry a message's topic, not whether it says yes or no, denies, asks,
hedges, greets, closes or corrects itself: MiniLM puts "No side effects" next to "I have
side effects". These functions read that from the words (`lexicon`); each answers one
question about a message and none decides anything: the fitted scorer weighs them.

Which part of a message carries its point is read here too (`focus`): its first request
("I want to sign up and also book a class"), what follows a contrast with a denial ("not
X, but Y"), what a correction says instead ("not basic, full please"), with the clauses
that only deny set aside ("nothing is broken, I wanted to ask about my lease").
"""

from __future__ import annotations

import re

from cgraph.backends.offline.lexicon import LEXICON as lx

FOCUS_WORDS = 3
"""What follows a contrast must be this long to stand for the message."""
CORRECTION_WORDS = 5
"""A correction names what it is not in at most this many words."""
SCOPE_WORDS = 6
"""How far a negation reaches inside its clause."""
CLAUSE_WORDS = 3
"""A clause shorter than this ("yes", "thanks") is not weighed on its own."""


def clauses(text: str) -> list[str]:
    return [c.strip() for c in lx.CLAUSES.split(text) if c and c.strip()]


def without_limits(text: str) -> str:
    """`text` with the negators of its limits taken out: "I can't have gluten" → "I have
    gluten" (a condition the user has, not an answer denied)."""
    said: str = lx.LIMIT.sub(lambda m: m.group("can") or m.group("does"), text)
    return said


def states_limit(text: str) -> bool:
    return lx.LIMIT.search(text) is not None


def without_assent(text: str) -> str:
    """`text` with its yes-saying negations ("no problem", "I don't mind") taken out."""
    return " ".join(lx.ASSENT.sub(" ", text).split())


def assents(text: str) -> bool:
    return lx.ASSENT.search(text) is not None


def is_negated(text: str) -> bool:
    return lx.NEGATOR.search(text) is not None


def affirmed(text: str) -> str:
    """`text` without its negators: what it would say if nothing were denied."""
    return " ".join(lx.NEGATOR.sub(" ", text).split())


def denied_phrases(text: str) -> list[str]:
    """The phrases `text` negates: the topic words after each clause's first negator.
    "No side effects, I feel fine" → ["side effects"]; a bare "No." denies no topic."""
    found = []
    for clause in clauses(without_assent(without_limits(text))):
        match = lx.NEGATOR.search(clause)
        if match is None:
            continue
        words = lx.WORD.findall(clause[match.end() :])[:SCOPE_WORDS]
        topic = [w for w in words if not lx.FILLER.match(w) and not lx.NEGATOR.fullmatch(w)]
        if topic:
            found.append(" ".join(words))
    return found


def polarity(text: str) -> int:
    """+1 for a yes-answer, -1 for a no-answer or a negated statement, 0 otherwise."""
    if lx.LEADING_YES.search(text) or assents(text):
        return 1
    if lx.LEADING_NO.search(text) or lx.NEGATOR.search(without_limits(text)):
        return -1
    return 0


def leading_answer(message: str) -> int:
    """+1 when the message opens with a yes ("sure, send them up", "no problem, I'm in"),
    -1 when it opens with a bare no ("no, I'm about to go out", "not now"), else 0."""
    corrected = lx.CORRECTED_ANSWER.search(message)  # "no, well actually yes": the last word
    if corrected:
        return 1 if corrected.group(1).lower().startswith("y") else -1
    parts = clauses(message)
    if lx.LEADING_YES.match(message) or (parts and assents(parts[0])):
        return 1
    # "nothing's wrong with him, he just needs his booster" denies a topic, then says
    # something else: no answer to the question.
    first = lx.LEADING_NO.match(message)
    bare = first is not None and (
        len(parts) == 1 or lx.BARE_REST.fullmatch(parts[0][first.end() :]) is not None
    )
    return -1 if bare else 0


def is_hedge(text: str) -> bool:
    """The user is unsure or not ready to answer ("maybe?", "not sure", "let me check")."""
    return lx.HEDGE.search(text) is not None


def is_question(text: str) -> bool:
    """Ends with a question mark, or opens as a question does ("what's the best …")."""
    return text.rstrip().endswith("?") or bool(lx.OPENS_QUESTION.match(text))


def is_request(text: str) -> bool:
    """A question phrased as a request ("Can you…?", "…please?") asks for an action."""
    return lx.REQUEST.search(text) is not None


def without_greeting(message: str) -> str:
    """ "Hi, my card was stolen" → "my card was stolen": a greeting before the point."""
    rest = lx.GREETING.sub("", message, count=1)
    return rest if rest != message and len(rest.split()) >= 2 else message


def is_greeting(message: str) -> bool:
    """Only a greeting ("Hello Ava, good morning to you."): nothing is left once
    courtesies and at most two names are set aside. It answers no question."""
    if not lx.GREETING.match(message):
        return False
    rest = lx.COURTESY.sub(" ", message)
    words = re.findall(r"[\w']+", rest)
    names = re.findall(r"[\w']+", " ".join(lx.NAME.findall(rest)))
    return len(words) <= 2 and len(words) == len(names)


def closes(message: str) -> bool:
    """The message sounds like a close (thanks, a no, a farewell), asking nothing and
    adding no second thing ("great, also the bathroom light is out" does not close)."""
    if is_question(message) or lx.ADDS_MORE.search(message):
        return False
    return bool(lx.CLOSING_OPENER.match(message) or lx.FAREWELL_END.search(message))


def adds_more(message: str) -> bool:
    """The message brings up a second thing or puts the first off ("yes but first…",
    "ok, and also…", "wait")."""
    return lx.ADDS_MORE.search(message) is not None


def not_leaving(message: str) -> bool:
    """The message says the user is not done ("not yet, one more thing", "before I go")."""
    return lx.NOT_LEAVING_CUE.search(message) is not None


def cries_for_help(message: str) -> bool:
    return lx.URGENT_CUE.search(message) is not None


def corrects_itself(message: str) -> bool:
    """The message takes back a detail ("friday, no sorry, thursday", "I meant …")."""
    return lx.CORRECTION.search(message) is not None


def urgent_parts(message: str) -> list[str]:
    """The message, then each of its clauses when it has more than one: the urgent thing
    may be the second ("I got charged twice and honestly I want to cancel")."""
    parts = [c for c in clauses(message) if len(c.split()) >= CLAUSE_WORDS]
    return [message, *(parts if len(parts) > 1 else [])]


def point(text: str) -> str:
    """What `text` says once the clauses that only deny are set aside: "not a leak, it's
    the oven" → "it's the oven"; the text itself when every clause denies."""
    parts = clauses(without_assent(text))
    kept = [c for c in parts if not (lx.DENIES.match(c) and " " in c)]
    rest = ", ".join(kept)
    return rest if len(kept) < len(parts) and len(rest.split()) >= FOCUS_WORDS else text


def contrast_focus(text: str) -> str:
    """The part of `text` after the first contrast that follows a denial ("not X, but Y"
    → "Y") or after a correction ("not X, Y"); `text` itself without one."""
    pieces = lx.BOUNDARY.split(text)
    for index in range(2, len(pieces), 2):
        before, separator = "".join(pieces[: index - 1]), pieces[index - 1]
        after = "".join(pieces[index:]).strip()
        contrasted = separator.lower() == "but" or lx.CONTRAST.match(after) is not None
        if contrasted and is_negated(before) and len(after.split()) >= FOCUS_WORDS:
            return after
    return corrected(text)


def corrected(text: str) -> str:
    """What a correction says instead: "not basic, full please" → "full please"."""
    before, comma, after = text.partition(",")
    after = after.strip()
    corrects = lx.NOT_CORRECTION.match(before) or lx.NOT_THAT.match(before)
    if not comma or len(before.split()) > CORRECTION_WORDS or not corrects:
        return text
    if not after or lx.DENIES.match(after) or lx.CONTRAST.match(after):
        return text
    return after


def first_request(text: str) -> str:
    """The first of two things asked in one message ("I want to sign up and also book a
    class" → "I want to sign up")."""
    match = lx.ALSO.search(text)
    if match is None or len(text[: match.start()].split()) < FOCUS_WORDS:
        return text
    return text[: match.start()]


def focus(text: str) -> str:
    """What of `text` is matched: its first request, its point after a contrast or a
    correction, its denials set aside."""
    return point(contrast_focus(first_request(text)))


def last_clause(text: str) -> str:
    """What a message that corrects itself ends on ("friday, no sorry, thursday")."""
    parts = [c for c in clauses(text) if len(c.split()) >= 1]
    return parts[-1] if parts else text


def message_texts(message: str) -> list[str]:
    """Every text the features embed for a message: it, its focus, its clauses and the
    phrases it denies, in one batch (one model run instead of one each)."""
    texts = [message, focus(message), contrast_focus(message), *urgent_parts(message)]
    texts += denied_phrases(contrast_focus(message))
    return list(dict.fromkeys(t for t in texts if t.strip()))
