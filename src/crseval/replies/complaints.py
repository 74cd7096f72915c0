"""Whether a user turn complains about a failure of the reply before it, rather than about a film.

COMPLAINT: a user turn complains when it says that the reply failed as a reply, whatever the user's taste: it
is not a film, or not the kind of thing asked for ("that's a book, not a movie", "is that even a movie?",
"that movie doesn't exist"); it is not what was asked ("I asked for a comedy", "that's not what I asked",
"I already told you"); it was said already ("you said that already", "you keep suggesting the same ones",
"that one again?"); it makes no sense ("what?", "huh", "this makes no sense", "what are you talking about");
it does not answer ("that doesn't answer my question", "where is the recommendation?"); it is broken, useless
or wrong ("are you broken?", "you're not listening", "that's wrong", "wrong genre").

A turn that only turns a film down for the user's taste is no complaint ("no, I don't like horror",
"something else please", "I've seen it", "not my thing"), nor is a question about a film ("what is it
about?") or a plain "what" inside a sentence. The rules (COMPLAINTS) are regexes written for this project,
case ignored, each of a phrase that says the reply itself went wrong; a turn complains when one of them
matches. They are kept narrow: a complaint they miss costs less than a turn-down read as one, since the user
simulator and the realism check read a complaint as a sign that the reply failed.
"""

from __future__ import annotations

import re

_NOT_A_FILM = (
    # "that's a book, not a movie", "it isn't even a film!": the claim ends there, else it is a turn-down
    # ("not a movie I like")
    r"\bnot (?:even )?(?:a |an )?(?:real |actual )?(?:movie|film)s?(?: titles?| names?)?\s*(?:[.!?,]|$)",
    r"\b(?:is|are|was)n[’']?t (?:even )?(?:a |an )?(?:real |actual )?(?:movie|film)s?\s*(?:[.!?,]|$)",
    r"\b(?:is|was) (?:that|this|it) (?:even |really )?(?:a |an )?(?:real |actual )?(?:movie|film)\s*\?",
    # "that's a book!" "it's a TV show, not ...": the kind alone, the message or the claim ends there (not "but
    # that's a book. Can you ...", said of a film the user named)
    r"\b(?:that|this|it)(?:[’']s| is) (?:a|an) (?:book|novel|song|album|band|game|video game|tv show|"
    r"tv series|show|series|podcast|restaurant|recipe|person|actor|actress|director|genre)"
    r"(?:\s*,?\s*not\b|[\s.!?]*$)",
    r"\b(?:those|these|they)(?:[’']re| are) (?:all )?(?:books|novels|songs|albums|tv shows|shows|series|games)\b",
    # "not a book, ...", "movies, not books": what the reply gave, turned away as a kind
    r"\bnot (?:a |an )?(?:book|novel|song|album|tv show|show|series|podcast|game)s?\s*(?:[.!?,;]|$)",
    r"\b(?:sounds?|seems?|looks?) like (?:a )?real (?:movies?|films?)\b",
    r"\b(?:is|was|are) (?:that|this|it|they|those|these) (?:even )?(?:a )?real (?:movies?|films?)\b",
    r"\b(?:doesn[’']?t|does not|don[’']?t|do not) (?:even )?exist\b",
    r"\b(?:don[’']?t|do not) think (?:that|it|this|they|those) (?:even |really )?exists?\b",
    r"\bno such (?:movie|film|thing)\b",
    r"\bi said (?:a |some )?(?:movies?|films?)\b",
)
_NOT_WHAT_WAS_ASKED = (
    r"\bi asked (?:for|about|you)\b",
    r"\bi(?:[’']ve| have)? (?:just |already )?(?:told you|said that)\b",
    r"\bnot what i (?:asked|meant|said|requested)\b",
    r"\bthat(?:[’']s| is| was)(?: not|n[’']?t) (?:what i asked|my question|the question)\b",
    r"\bi (?:did not|didn[’']?t) (?:ask|say|mention)\b",
    r"\bwrong (?:kind|type|sort|thing|genre|answer|question|again)\b",
    r"^\W*wrong\W*$",
    r"\b(?:did you|do you) (?:even )?(?:read|hear|listen to) (?:me|what i|my)\b",
)
_SAID_ALREADY = (
    r"\byou already (?:said|told|mentioned|asked|suggested|recommended|gave|offered|named)\b",
    r"\byou just (?:said|told me|asked)(?: (?:that|this|it|me that))?\s*(?:[.!?]|$)",
    r"\byou (?:said|asked|told me|suggested|recommended|mentioned|gave me) (?:that|this|it|them|those|these|the same)"
    r"(?: \w+)? (?:already|before|again|twice)\b",
    r"\b(?:repeating|repeat) yourself\b",
    r"\byou keep (?:saying|repeating|asking|suggesting|recommending|giving|telling|offering)\b",
    r"\b(?:the )?same (?:thing|answer|response|reply|question|list|movies?|films?|suggestions?|recommendations?|ones?)"
    r" (?:again|as before|over and over)\b",
    # "That one again?" opening its sentence (not "who is in that again?")
    r"(?:^|[.!?,]\s*)(?:this|that|those)(?: one| ones| movie| film| movies| films)? again\s*\?",
)
_NO_SENSE = (
    r"^\W*(?:wait\W+|um+\W+|uh+\W+)?what\s*\?+\W*$",
    r"^\W*huh\b\W*$",
    r"^\W*huh\s*\?",
    r"\b(?:makes|made|making) no sense\b",
    r"\b(?:does|did|do)(?:n[’']?t| not) make (?:any |much )?sense\b",
    r"\bnot making (?:any )?sense\b",
    r"\b(?:nonsense|gibberish)\b",
    r"\bwhat (?:are you|r u|are u) (?:even )?(?:talking about|saying|on about)\b",
    r"\bwhat (?:do|did) you mean\s*\?",
    r"\bwhat (?:is|was) (?:that|this) supposed to mean\b",
    r"\bi (?:do not|don[’']?t) understand (?:you|what you|your (?:answer|reply|response|message))\b",
    r"^\W*i (?:do not|don[’']?t) (?:really |realy )?understand\W*$",
)
_NO_ANSWER = (
    r"\b(?:did|does|do|that|this|you)(?:n[’']?t| not| didn[’']?t| don[’']?t| doesn[’']?t) (?:even |really )?"
    r"answer\b",
    r"\bnot (?:an )?answer(?:ing)? (?:my|the) question\b",
    r"\b(?:please )?answer (?:my|the) question\b",
    r"\bthat (?:was|is)(?:n[’']?t| not) (?:my|the) question\b",
    r"\bwhere(?:[’']s| is| are) (?:the|my|your) (?:movies?|films?|recommendations?|suggestions?)\b",
    r"\byou (?:didn[’']?t|did not|haven[’']?t|have not) (?:recommend|suggest|give me|name|answer)(?:ed)? "
    r"(?:a |any |me a |me any )?(?:movies?|films?|anything|answer|question)\b",
)
_BROKEN = (
    r"\byou(?:[’']re| are) (?:so |totally |completely )?"
    r"(?:useless|broken|unhelpful|not helpful|no help|stupid|dumb|confusing|buggy|a bot)\b",
    r"\b(?:this is|that[’']?s|that is|it[’']?s) (?:so |totally |completely )?"
    r"(?:useless|broken|unhelpful|not helpful|no help|buggy|glitch(?:ed|ing|y))\b",
    r"\b(?:you(?:[’']re| are)) not (?:listening|helping|understanding|making sense)\b",
    r"\b(?:you|u) (?:don[’']?t|do not|didn[’']?t|did not) (?:understand|get it|listen|get what i)\b",
    r"\bare (?:you|u) (?:a bot|broken|stuck|even listening|listening|ok|okay|still there|there)\s*\?",
    r"\b(?:that[’']?s|that is|this is|you[’']?re|you are) (?:not right|wrong|incorrect|not true|not correct)\b"
    r"(?! (?:for|about) me\b)",
)
COMPLAINTS = tuple(
    re.compile(pattern, re.IGNORECASE)
    for pattern in (*_NOT_A_FILM, *_NOT_WHAT_WAS_ASKED, *_SAID_ALREADY, *_NO_SENSE, *_NO_ANSWER, *_BROKEN)
)


def complains(user_text: str) -> bool:
    """Whether a user turn complains about a failure of the reply before it (module docstring, COMPLAINT)."""
    if not isinstance(user_text, str):
        raise TypeError(f"complains: user_text must be a string, not {type(user_text).__name__}")
    return any(pattern.search(user_text) for pattern in COMPLAINTS)
