"""Which turns of a mixed corpus read like the voice's own corpus, the users of a system.

People who wrote to another person (ReDial's seekers and the like) say what users of a system seldom say: "I'll
check it out", what they have seen and loved, how their week went. Mixed into a voice as they are, those turns
make the simulated user less like users of a system, not more (docs/simulation.md, "Keeping the turns that read
like users of a system"). A turn of a mixed corpus is kept where it is at least as likely under the voice's
own corpus as under its own corpus: a naive Bayes comparison of the two word models (words and word pairs of
the turn's template, add-one smoothing), the turn's own person left out of its corpus's counts so that a
person's habits do not vouch for themselves. The comparison is made in whole numbers, so no float rounding can
move a turn across it on another CPU.
"""

from __future__ import annotations

import re
from collections import Counter

_TOKEN = re.compile(r"\{\w+\}|[a-z0-9']+|[?!]")  # a slot, a word, or the marks a question or an outcry ends with


def likeness_tokens(template: str) -> list[str]:
    """The words of a template (lower case; its slots and question and exclamation marks as words) and each pair
    of neighbouring words: the features both word models count."""
    words = _TOKEN.findall(template.lower())
    return words + [f"{a} {b}" for a, b in zip(words, words[1:])]


class VoiceLikeness:
    """The word model of the voice's own corpus (`own`: its templates), against which a mixed corpus's turns are
    weighed (`keeps`)."""

    def __init__(self, own: list[str]):
        self.own = Counter(token for template in own for token in likeness_tokens(template))
        self.own_total = sum(self.own.values())

    def keeps(self, turns: list[tuple[str, str]]) -> list[bool]:
        """For each (person, template) of one mixed corpus, whether the template is at least as likely under the
        voice's own word model as under that corpus's without the person (a token neither model has seen
        counts for neither). Exact: the products of the add-one counts compared as integers."""
        by_person: dict[str, Counter] = {}
        corpus = Counter()
        for person, template in turns:
            tokens = Counter(likeness_tokens(template))
            by_person.setdefault(person, Counter()).update(tokens)
            corpus.update(tokens)
        vocabulary = len(set(self.own) | set(corpus))
        corpus_total = sum(corpus.values())
        person_totals = {person: sum(counts.values()) for person, counts in by_person.items()}
        kept = []
        for person, template in turns:
            mine = by_person[person]
            own_side, corpus_side, seen = 1, 1, 0
            for token in likeness_tokens(template):
                in_own, in_corpus = self.own[token], corpus[token] - mine[token]
                if in_own or in_corpus:
                    own_side *= in_own + 1
                    corpus_side *= in_corpus + 1
                    seen += 1
            others_total = corpus_total - person_totals[person]
            # P(own) >= P(corpus): prod(own+1)/(own_total+V)^n >= prod(corpus+1)/(others_total+V)^n
            kept.append(
                own_side * (others_total + vocabulary) ** seen >= corpus_side * (self.own_total + vocabulary) ** seen
            )
        return kept
