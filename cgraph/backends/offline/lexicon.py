"""Every word list of the offline chooser, once: what its features read from the words.

Sentence embeddings carry a message's topic, not whether it is affirmed, asked, hedged or
a goodbye; these lists are how the chooser reads those. Each list is written here once and
every pattern is built from the lists (one "yes", one "no"); the modules that read a
message (`reading`, `options`, `words`) only use them. A list changed here changes a
feature, so the scorer is fitted again afterwards (`bench/fit_chooser.py`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass


def _any(words: tuple[str, ...]) -> str:
    """The words as one alternation, longest first (so "no thanks" wins over "no"); an
    apostrophe may be typographic or left out ("don't", "don’t", "dont")."""
    escaped = (re.escape(w).replace("'", "['’]?") for w in sorted(words, key=len, reverse=True))
    return "|".join(escaped)


def _opening(words: tuple[str, ...]) -> re.Pattern[str]:
    return re.compile(rf"^\W*(?:{_any(words)})\b", re.I)


def _anywhere(words: tuple[str, ...]) -> re.Pattern[str]:
    return re.compile(rf"\b(?:{_any(words)})\b", re.I)


# -- yes and no ----------------------------------------------------------------------------

YES = (
    "yes", "yeah", "yep", "yup", "yea", "sure", "ok", "okay", "of course", "certainly",
    "absolutely", "definitely", "correct", "right", "affirmative", "go ahead", "go on",
    "please do", "fine", "alright", "all right", "sounds good", "why not", "i did", "i have",
    "i do", "perfect", "exactly", "that's right", "yes please",
)  # fmt: skip
NO = (
    "no", "nope", "nah", "not", "never", "none", "nothing", "neither", "nor", "negative",
    "no thanks", "not really", "not at all", "not yet", "not now", "not today",
    "not needed", "don't think so", "i don't think so", "i can't think of any",
    "i can't think of anything", "not that i know", "not that i know of",
    "not as far as i know", "not that i remember", "not that i can remember",
    "not that i recall", "not that i can recall", "not that i can think of",
)  # fmt: skip
SAYS_YES = ("Yes.", "Yes, go ahead.", "Yeah, do it.", "Sure, that's right.", "Correct.")
"""How users answer yes to a yes-or-no question (a boolean slot's answer, `answers`)."""
SAYS_NO = ("No.", "No, don't.", "Nope, not that.", "No thanks.")
"""How users answer no to a yes-or-no question."""
NEGATORS = ("no", "not", "never", "without", "nothing", "none", "nobody", "neither", "nor")
CONTRACTED = (
    "ca", "do", "does", "did", "is", "are", "was", "were", "have", "has", "had", "would",
    "could", "should", "wo", "must", "need", "ai",
)  # fmt: skip
"""Verbs whose "n't" negates ("didn't", and "didnt" as people type it)."""
ASSENTS = (
    "no problem", "no worries", "no bother", "no doubt", "not a problem", "i don't mind",
    "don't mind", "i don't care", "don't care", "why not", "no reason not to",
)  # fmt: skip
"""Negations that say yes."""
CORRECTORS = ("actually", "wait", "i mean", "sorry", "no sorry", "i meant", "scratch that")
"""Words that take back what was just said ("friday, no sorry, thursday")."""

# -- what a message is ----------------------------------------------------------------------

GREETINGS = (
    "hi", "hii", "hiii", "hello", "hey", "heyy", "hiya", "howdy", "yo", "good morning",
    "good afternoon", "good evening", "morning", "evening", "afternoon",
)  # fmt: skip
COURTESIES = (
    "hi", "hello", "hey", "hiya", "good", "morning", "afternoon", "evening", "day", "to",
    "you", "too", "and", "how's", "how", "hows", "are", "r", "u", "is", "it's", "it",
    "going", "doing", "there", "all", "everyone", "nice", "great", "lovely", "meet", "see",
    "again", "thanks", "thank", "cheers", "today", "dear", "sir", "madam", "dr", "mr", "mrs",
    "ms",
)  # fmt: skip
"""What may follow a greeting without saying anything: names aside, a greeting alone."""
QUESTION_OPENERS = (
    "what", "what's", "whats", "when", "where", "why", "how", "who", "which", "is", "are",
    "does", "do", "did", "can", "could", "will", "would", "should",
)  # fmt: skip
HEDGES = (
    "not sure", "unsure", "maybe", "perhaps", "idk", "i dunno", "dunno", "not certain",
    "hard to say", "hard to tell", "let me think", "let me check", "let me look",
    "let me see", "let me find", "let me ask", "hang on", "hold on", "give me a sec",
    "give me a second", "give me a minute", "give me a moment", "wait a sec",
    "wait a second", "wait a minute", "just a sec", "just a second", "just a minute",
    "just a moment", "one sec", "one second", "one moment", "one mo", "we'll see",
    "can't remember", "don't remember", "cannot remember", "can't recall", "don't recall",
    "need to check", "need to look", "need to ask", "need to see", "have to check",
    "have to look", "have to ask", "have to see",
    "need to think", "need to find out", "i think so?", "kind of?", "sort of?", "i guess?",
)  # fmt: skip
CLOSINGS = (
    "ok", "okay", "k", "great", "thanks", "thank you", "thx", "cheers", "ta", "no", "nope",
    "nah", "nothing", "fine", "perfect", "brilliant", "lovely", "cool", "alright",
    "all right", "all good", "fair enough", "good", "bye", "goodbye", "good-bye",
    "good night", "goodnight", "see you", "that's it", "that's all", "that's everything",
    "never mind", "forget it",
)  # fmt: skip
"""How a message that closes the conversation opens."""
FAREWELLS = (
    "bye", "goodbye", "good-bye", "good night", "goodnight", "see you", "see ya", "cya",
    "talk later", "talk soon", "talk tomorrow", "take care",
)  # fmt: skip
MORE = (
    "also", "another", "one more", "but", "before i go", "before you go", "one last",
    "not yet", "not done", "not finished", "wait", "hang on", "hold on", "first",
    "quick question", "and", "still",
)  # fmt: skip
"""A second thing after a close: the message is about it ("thanks, but one more thing")."""
NOT_LEAVING = (
    "not leaving", "not done", "not finished", "not yet", "one more thing", "one more",
    "before i go", "before you go", "before we finish", "don't go", "not quite",
    "hang on", "hold on", "wait", "also", "another thing", "one last thing",
    "quick question", "still need", "there's more", "not everything", "not all",
)  # fmt: skip
"""Words of a message that sounds like a goodbye but is not."""
URGENT = ("help", "emergency", "ambulance", "urgent", "urgently", "danger", "police", "999", "911")
REQUEST_OPENERS = (
    "can you", "could you", "would you", "will you", "can i", "could i", "may i", "can we",
    "could we", "may we", "can someone", "can somebody", "could someone", "can my",
    "can our", "is there somewhere", "is there anywhere", "is there a way", "is there any way",
    "i want", "i'd like", "i would like", "i need", "we need", "we want", "please",
)  # fmt: skip
"""How a request opens: it asks for an exit's action, not about it."""

# -- how a message is cut and weighed --------------------------------------------------------

CLAUSE_JOINS = ("but", "and", "though", "although", "so", "because")
CONTRASTS = ("just", "only", "simply", "more", "rather", "actually", "instead")
"""After a denial, what the user came to say ("not X, just Y")."""
NOT_CORRECTIONS = (
    "really", "yet", "now", "right now", "today", "sure", "at all", "that", "as", "so", "too",
    "much", "quite", "before", "after", "later", "earlier", "until", "till", "more", "less",
    "over", "under",
)  # fmt: skip
"""What a short "not …" names when it is a limit or a plain no, not a correction."""
FILLERS = (
    "really", "at", "all", "any", "anything", "more", "much", "yet", "even", "just",
    "quite", "so", "too", "a", "an", "the", "that", "this", "it", "them", "one", "ones",
    "like", "else", "sure", "think", "know", "have", "had", "do", "did", "be", "been", "was",
    "is", "are", "got", "get", "need", "needed", "i", "we", "you", "he", "she", "they",
    "my", "me",
)  # fmt: skip
"""Words after a negator that carry no topic of their own ("not really")."""
LIMIT_VERBS = (
    "eat", "drink", "have", "sleep", "drive", "walk", "exercise", "train", "run", "afford",
    "manage", "climb", "lift", "bend", "stand", "hear", "see",
)  # fmt: skip
"""After "can't", a limit the user has ("I can't have gluten"), not an answer denied."""
DIET_VERBS = ("eat", "drink", "drive")
"""After "don't", the same ("I don't eat pork")."""
STOP_WORDS = frozenset(
    [
        "a",
        "about",
        "above",
        "after",
        "again",
        "all",
        "also",
        "am",
        "an",
        "and",
        "any",
        "are",
        "as",
        "at",
        "be",
        "been",
        "before",
        "being",
        "below",
        "but",
        "by",
        "can",
        "could",
        "did",
        "do",
        "does",
        "doing",
        "done",
        "don't",
        "for",
        "from",
        "further",
        "had",
        "has",
        "have",
        "having",
        "he",
        "her",
        "here",
        "hers",
        "him",
        "his",
        "how",
        "i",
        "i'd",
        "i'll",
        "i'm",
        "i've",
        "if",
        "in",
        "into",
        "is",
        "it",
        "it's",
        "its",
        "itself",
        "just",
        "let",
        "me",
        "more",
        "most",
        "my",
        "myself",
        "of",
        "off",
        "on",
        "once",
        "only",
        "or",
        "other",
        "our",
        "out",
        "over",
        "own",
        "same",
        "she",
        "should",
        "so",
        "some",
        "such",
        "than",
        "that",
        "that's",
        "the",
        "their",
        "them",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "through",
        "to",
        "too",
        "under",
        "until",
        "up",
        "very",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "while",
        "who",
        "whom",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
        "yours",
        "yes",
        "yeah",
        "no",
        "not",
        "nope",
        "never",
        "nothing",
        "none",
        "okay",
        "ok",
        "oh",
        "well",
        "hi",
        "hello",
        "hey",
        "please",
        "thanks",
        "thank",
        "really",
        "actually",
        "maybe",
        "also",
        "still",
        "even",
        "one",
        "get",
        "got",
        "want",
        "wants",
        "need",
        "needs",
        "like",
        "say",
        "says",
        "said",
        "tell",
        "tells",
        "ask",
        "asks",
        "user",
        "customer",
        "client",
        "caller",
        "tenant",
        "owner",
        "patient",
        "passenger",
        "member",
        "person",
        "someone",
        "something",
        "thing",
        "things",
        "right",
        "now",
        "today",
    ]
)
"""Function words, courtesies and a narrator's words about the user: no topic."""
SUFFIXES = ("ations", "ation", "ings", "ing", "edly", "ed", "ies", "es", "ers", "er", "ly", "s")

# -- how exits are described -----------------------------------------------------------------

NARRATOR_VERBS = (
    "says", "reports", "mentions", "states", "explains", "confirms", "indicates",
)  # fmt: skip
PRONOUNS = {
    "their": "my", "they": "I", "them": "me", "themselves": "myself", "theirs": "mine",
    "his": "my", "her": "my", "he": "I", "she": "I",
}  # fmt: skip
"""A description's third person, said by the user."""
IRREGULAR = {"is": "am", "has": "have", "does": "do", "was": "was", "says": "say"}
SECOND_PERSON = {"is": "are", "has": "have", "does": "do", "was": "were", "am": "are"}
"""A description's verb, said to the user ("is done" → "are done")."""
WANTING = re.compile(
    r"^(?:asks|would like|wishes|wants|requests|chooses|decides|prefers)\s+(to|for)\b", re.I
)
"""A description's "asks to", "would like to" ...: what the user wants ("want to")."""
YOU = {"their": "your", "they": "you", "them": "you", "themselves": "yourself",
       "theirs": "yours", "his": "your", "her": "your", "he": "you", "she": "you"}  # fmt: skip
"""A description's third person, said to the user."""
REFUSALS = (
    "declin", "refus", "reject", "turns down", "turn down", "gives up", "give up",
    "changes his mind", "changes her mind", "changes their mind", "prefers to stay",
    "prefer to stay", "prefers to keep", "prefer to keep", "prefers stay", "would rather not",
)  # fmt: skip
LEAVES = (
    r"good-?bye", r"says? bye", r"hangs? up", r"is done\b",
    r"(?:has|needs|says) nothing (?:else|more)",
    r"(?:wants?|asks?) to (?:stop|end|quit|go|leave)(?: (?:here|now|for (?:now|today)))?\W*$",
    r"ends? (?:the|this) (?:session|call|chat|conversation|check-?in)", r"no longer needs",
    r"(?:is|are) finished", r"nothing else",
)  # fmt: skip
"""How a description says the user leaves the conversation (patterns)."""
VERB_OPENERS = (
    "is", "was", "are", "were", "has", "have", "had", "will", "would", "can", "could",
    "does", "do", "did", "may", "might", "should", "must", "gets", "get", "got", "says",
    "say", "wants", "want", "needs", "need", "asks", "ask",
)  # fmt: skip
"""An alternative that opens with one of these says something of its own ("or will be out")."""

CONVERSATIONAL = (
    "Hello.",
    "Hi, how are you?",
    "What do you mean?",
    "Can you explain that?",
    "I have a question.",
    "Wait a moment.",
    "I don't know.",
    "Why do you ask?",
    "Sorry, say that again?",
    "Tell me more first.",
    "Thanks for asking.",
)
"""Conversational moves that never answer a state's question: a prototype of staying."""

ORDINALS = {
    "first": 0, "1st": 0, "former": 0, "second": 1, "2nd": 1, "latter": -1,
    "third": 2, "3rd": 2, "last": -1,
}  # fmt: skip
"""How an answer to a clarifying question points at one of the options it named."""

# -- the patterns built from the lists --------------------------------------------------------

LEADING_YES = _opening(YES)
LEADING_NO = _opening(NO)
NEGATOR = re.compile(
    rf"\b(?:{_any(NEGATORS)}|cannot|(?:{_any(CONTRACTED)})n['’]?t)\b",
    re.I,
)
ASSENT = _anywhere(ASSENTS)
BARE_NO = re.compile(
    r"^\W*(?:no+|nope|nah|not really|not at all|not yet|nothing(?: else| like that)?|none|never)"
    r"\W*(?:$|[,.!;]|\b(?:thanks|thank you)\b)",
    re.I,
)
"""A message that is only a no ("No.", "Nope, thanks")."""
BARE_REST = re.compile(r"\W*(?:thanks|thank you|sorry|no|not really)?\W*", re.I)
CORRECTED_ANSWER = re.compile(rf"\b(?:{_any(CORRECTORS)}),? (yes|yeah|no)\b", re.I)
CORRECTION = re.compile(rf"\b(?:{_any(CORRECTORS)})\b|\b(?:not|no)\b[^,]{{1,30}},", re.I)
HEDGE = re.compile(rf"\b(?:{_any(HEDGES)})(?=\W|$)|\b(?:don['’]?t know|no idea)\b(?! where)", re.I)
GREETING = re.compile(rf"^\W*(?:{_any(GREETINGS)})+(?: there)?\b[\s,!.:;-]*", re.I)
COURTESY = _anywhere(COURTESIES)
NAME = re.compile(r"(?<![.!?]\s)(?<![.!?])\b[A-Z][\w']*")
OPENS_QUESTION = re.compile(
    rf"^\W*(?!(?:how|what) about\b)(?:{_any(QUESTION_OPENERS)})\b(?!.*[.!]\s*\S)", re.I
)
REQUEST = re.compile(
    r"^\W*(?:(?:can|could|would|will) you|(?:can|could|may) (?:i|we|someone|somebody|my|our)"
    r"(?! (?:ask|say)\b)|is there (?:somewhere|anywhere|a way|any way)(?: (?:i|we) can)?)\b"
    r"|\bplease\b",
    re.I,
)
ASKS_FOR = re.compile(r"^\W*(?:can|could|would|will|may) (?:you|i|we)\b|\bplease\b", re.I)
ASKS = re.compile(r"\bask(?!s? (?:to|for)\b)", re.I)
"""A description that says the user asks about something expects questions."""
CLOSING_OPENER = _opening(CLOSINGS)
FAREWELL_END = re.compile(rf"\b(?:{_any(FAREWELLS)})(?: \w+)?\W*$", re.I)
ADDS_MORE = _anywhere(MORE)
NOT_LEAVING_CUE = _anywhere(NOT_LEAVING)
URGENT_CUE = re.compile(rf"^\W*(?:please )?help\b|\b(?:{_any(URGENT[1:])})\b", re.I)
REQUEST_CUE = _opening(REQUEST_OPENERS)
CLAUSES = re.compile(rf"[,.;:!?()]|\s-\s|\b(?:{_any(CLAUSE_JOINS)})\b", re.I)
BOUNDARY = re.compile(r"([,.;:!?]|\bbut\b)", re.I)
CONTRAST = re.compile(
    rf"^\W*(?:(?:it['’]?s |it is |i |we |i['’]?m |i am )?(?:{_any(CONTRASTS[:-1])})|instead)\b",
    re.I,
)
ALSO = re.compile(
    r"\s*(?:,\s*|\s)(?:and\s+)?(?:(?:i|we|you|can|could|would|i['’]d|we['’]d|i['’]ll)\s+){0,2}"
    r"also\b",
    re.I,
)
DENIES = _opening(("no", "not", "nothing", "none", "never", "nope", "nah", "neither", "nor"))
NOT_CORRECTION = re.compile(
    rf"^\W*(?:(?:it|that)['’]?s |it is )?not (?!(?:{_any(NOT_CORRECTIONS)})\b)", re.I
)
NOT_THAT = re.compile(
    r"^\W*(?:(?:it|that|this)\s+(?:isn['’]t|wasn['’]t|is not|was not)\s+\w|"
    r"(?:[\w'’]+\s+){1,3}(?:isn['’]t|wasn['’]t|is not|was not)\s+"
    r"(?:the|my|our) (?:problem|issue)\b)",
    re.I,
)
FILLER = re.compile(rf"^(?:{_any(FILLERS)})$", re.I)
WORD = re.compile(r"[\w'’]+")
LIMIT = re.compile(
    r"\b(?:can['’]?t|cannot|can not|couldn['’]?t|won['’]?t)\s+(?:really\s+|even\s+)?"
    rf"(?P<can>{_any(LIMIT_VERBS)})\b|"
    rf"\b(?:don['’]?t|doesn['’]?t|do not|does not)\s+(?P<does>{_any(DIET_VERBS)})\b",
    re.I,
)
STEM_WORD = re.compile(r"[a-z]+(?:['’][a-z]+)?")
TOKEN = re.compile(r"[\w'’]+(?:[./@:-][\w'’]+)*")
NAMING = re.compile(r".*(?:\d|\w[./@:]\w).*")
"""A token that names something rather than says it: a number, a time, a file name, an
address ("12", "3pm", "notes.txt", "a@b.com"): a near-verbatim match reads it as a blank."""
NARRATOR = re.compile(
    r"^(?:the|a|an)\s+[\w-]+(?:'s \w+)?"
    rf"(?:\s+(?:{_any(NARRATOR_VERBS)}|tells \w+)(?: that)?)?\s+",
    re.I,
)
ROLE = re.compile(r"^(?:the|a|an)\s+[\w-]+\s+", re.I)
ALTERNATIVES = re.compile(r"\s*(?:\bor\b|;|,|\(|\)|\bsuch as\b)\s*", re.I)
PRONOUN = re.compile(r"\b(" + "|".join(PRONOUNS) + r")\b", re.I)
THIRD_PERSON_VERB = re.compile(r"[a-z]+(?:ies|[^s]s|ches|shes|sses|xes)")
HEAD_END = re.compile(r"\s(?:or|and)\s|[,;:(]", re.I)
REFUSES = re.compile(rf"\b(?:{_any(REFUSALS)})", re.I)
LEAVES_CONVERSATION = re.compile(rf"\b(?:{'|'.join(LEAVES)})", re.I)
VERB_OPENER = re.compile(rf"^(?:{_any(VERB_OPENERS)}|[a-z]+ed)\b", re.I)
ORDINAL = re.compile(rf"\b(?:{_any(tuple(ORDINALS))})\b", re.I)


# -- dialogue acts every conversation shares -------------------------------------------------


@dataclass(frozen=True, slots=True)
class Act:
    """One act: how a designer describes it, how users say it. An exit whose description
    is this close to the act's (`floor`) is also matched on the act's utterances."""

    description: str
    utterances: tuple[str, ...]
    negative: bool = False
    """Lent only to an exit whose description denies or refuses something: embeddings
    cannot tell "reports a danger" from "says there is no danger"."""
    floor: float = 0.6


ACTS = (
    Act(
        "The user is done, needs nothing else, or says goodbye.",
        (
            "That's all, thanks.",
            "No, nothing else.",
            "That's everything, bye.",
            "Nothing more, thank you.",
            "Goodbye.",
        ),
    ),
    Act(
        "The user says there is no problem: none of the things asked about happened.",
        ("No, nothing like that.", "No, none of those.", "Nope, everything is fine."),
        negative=True,
        floor=0.55,
    ),
    Act(
        "The user declines the offer or refuses what is proposed.",
        ("No thanks.", "Neither, thanks.", "No, I don't want that.", "I'll pass."),
        negative=True,
    ),
    Act(
        "The user asks to talk to a human, a real person or a member of staff.",
        (
            "Can I speak to an actual person?",
            "Put me through to someone, please.",
            "I want to speak to a manager.",
            "Connect me to an agent.",
            "I'd rather talk to a human.",
        ),
        floor=0.65,  # "The customer is done" lies at 0.6
    ),
    Act(
        "The user says they might harm themselves or do not want to live.",
        (
            "I don't want to be here anymore.",
            "I feel like a burden to everyone.",
            "Nobody would miss me if I was gone.",
            "I can't go on like this.",
            "I want to end it all.",
        ),
    ),
    Act(
        "The user decides to keep it unchanged after all.",
        ("Leave it as it is.", "Never mind, keep it.", "Don't change anything."),
    ),
)
