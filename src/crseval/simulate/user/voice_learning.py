"""Learning a voice from a corpus of real dialogues (crseval.simulate.user.voice says what a voice is).

The corpus is read by its importer (any importing format), its dialogues split into parts by a hash of
their user's id or their own (crseval.simulate.user.voice.dialogue_part), and the user turns of one part read,
typed and pooled by `learn_voice`; `fitted_knobs` gives the profile knobs the same turns show. Each turn is
read as people see it (crseval.simulate.user.voice.visible_text: no format or control character, NFKC), so that a
zero-width space inside "co\\u200bmedy" neither hides the value from the rules nor stays in a template. A turn
longer than a person types (MAX_TEMPLATE_CHARS) is left out, counted; a part of the corpus of which no
turn is kept has nothing to teach, and learning it is a CorpusError rather than a voice that says nothing.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from crseval.core.canonical import canonical_json
from crseval.corpora.dialogue import CorpusError
from crseval.corpora.formats import corpus_format
from crseval.language.concepts import ConceptMatcher
from crseval.language.user_acts import TurnReading, act_flags, read_turn
from crseval.replies.cases import START, catalog_reader, session_reply_cases
from crseval.replies.complaints import complains
from crseval.simulate.user.voice import (
    FIRST,
    LATER,
    LEAVE,
    MAX_TEMPLATE_CHARS,
    Voice,
    VoiceTemplate,
    dialogue_part,
    pool_key,
    speaker,
    visible_text,
)
from crseval.simulate.user.voice_likeness import VoiceLikeness
from crseval.simulate.user.voice_parts import PartPools

LIKE_THE_VOICE = "like_the_voice"  # a mixed corpus's turns kept where they read like the voice's own corpus
UNLIKE_THE_VOICE = "unlike the voice's own corpus (a mixed corpus's turn)"
_UNKNOWN_WORD = re.compile(r"\b[a-z]{3,}\b")
MIN_SAID = 2  # turns that must write a value one way before the simulated user writes it so


def voice_key(corpus_sha: str, settings: dict, mix_sha: tuple[str, ...] = ()) -> str:
    """What names a voice's pools: the content of its corpora (`mix_sha`: one digest per `mix` corpus, of its
    files) and the settings, not where the corpora lie (16 hex digits)."""
    split = {key: value for key, value in settings.items() if key != "corpus"}
    if split.get("mix"):
        split["mix"] = [
            {"keep": LIKE_THE_VOICE} | {k: v for k, v in corpus.items() if k != "paths"} | {"sha256": sha}
            for corpus, sha in zip(split["mix"], mix_sha)
        ]
    return hashlib.sha256(f"{corpus_sha}\n{canonical_json(split)}".encode("utf-8")).hexdigest()[:16]


def corpus_dialogues(paths: str | Path | list, import_format: str) -> list[dict]:
    """The dialogues of a corpus (a file, or several of one format) as its importer reads them (session
    records, the user turns it pairs with a reply), in file order."""
    files = [Path(p) for p in paths] if isinstance(paths, list) else [Path(paths)]
    imported, _ = corpus_format(import_format).import_logs(files, None, "0" * 64, "0" * 64)
    return [record for records in imported.values() for record in records]


def split_dialogues(records: list[dict], parts: int, part: int) -> tuple[list[dict], list[dict]]:
    """(the dialogues of `part`, the others), each in the given order."""
    inside = [r for r in records if dialogue_part(r, parts) == part]
    outside = [r for r in records if dialogue_part(r, parts) != part]
    return inside, outside


def template_slots(reading: TurnReading) -> tuple[str, ...]:
    """The slots of a reading's template, left to right ("genre:wish", "title")."""
    by_field = iter(f"{f}:{r}" for f, _, r in reading.statements)
    return tuple("title" if slot == "title" else next(by_field) for slot in re.findall(r"\{(\w+)\}", reading.template))


# A turn said to a person, not to a system (the rule of docs/simulation.md, "Turns said to a person"): it asks
# after the other's tastes or day, asks them whether they have seen a film, or answers small talk in kind.
# People who talk with a recommender who is a person say these; users of a system seldom do.
TO_A_PERSON = re.compile(
    r"\b(?:how|what) about you\b|\band you\b\W*$|^\W*you\?\W*$|\bhave you (?:ever )?(?:seen|watched|heard of)\b|"
    r"\bdid you (?:see|watch|like|enjoy|love)\b|\bdo you (?:like|love|enjoy|watch|prefer|have a favou?rite)\b|"
    r"\bwhat (?:do|kind of \w+ do|sort of \w+ do) you (?:like|watch|enjoy|prefer)\b|\byour favou?rite\b|"
    r"\bare you a fan\b|\bhow are you\b|\bhow(?:'s| is| was) your (?:day|night|evening|weekend|morning)\b|"
    r"\bnice (?:to )?(?:meet|chat(?:ting)?|talk(?:ing)?) (?:to |with )?you\b|\byou too\b|"
    r"\bi(?:'m| am) (?:good|fine|well|great|doing well)\b[^?]*\b(?:you|yourself)\b|"
    r"\bwhat (?:are|have) you (?:been )?(?:watching|seen)\b|\bwhere are you from\b|"
    r"\bhave a (?:good|great|nice|wonderful|lovely) (?:day|night|evening|one|weekend|time)\b|\benjoy your\b|"
    r"\b(?:it'?s|it has) been a pleasure\b|\b(?:it was|was|it's been) (?:a pleasure|fun|nice) (?:talking|chatting)\b|"
    r"\byou(?:'re| are) welcome\b|\bhope you (?:enjoy|like|have)\b",
    re.IGNORECASE,
)
# A value is a wish where the turn asks for films: a request cue, or a film word beside the value
# ("{genre} movies", "films with {actor}"), or nothing but the value and a few words around it.
_WISH_CUE = re.compile(
    r"\brec\w*m\w*nd|\bsugg?est|\blooking for\b|\bfind\b|\bgive me\b|\bshow me\b|"
    r"\bi(?:'d| would)? (?:like|love|want|prefer|need)\b|\bi(?:'m| am) (?:in the mood|into|thinking)\b|"
    r"\b(?:want|wanna|like|love|need|going) to (?:watch|see)\b|\bmood for\b|"
    r"\b(?:something|anything|another|any|some|more|other|else|instead|rather|only|no|not|without|but)\b|"
    r"\b(?:movies?|films?|flicks?|documentar(?:y|ies)|ones?|titles?)\b|\b(?:with|by|starring|directed|from)\s*\{",
    re.IGNORECASE,
)
# A film written with its year ("Heat (1995)", as corpora of two people write the films they mark): the year is
# the film's, not a wish for films of that year.
_TITLE_YEAR = re.compile(r"\{title\}\s*[(\[]?\s*\{year\}")
_SHORT_WISH_WORDS = 4  # a turn of at most this many words besides its slots states its values as wishes
# A value the next sentence dislikes ("more like a {genre} film. I don't like those"): the rules read a wish, the
# person rules the value out. Said again with the user's wish in the slot, the turn would contradict itself.
_DISLIKED_NEXT = re.compile(
    r"\{\w+\}(?:\s+(?:movies?|films?|ones?))?\s*[.!?]+\s*(?:but\s+|and\s+)?i\s+"
    r"(?:(?:really\s+)?(?:do\s*n\W{0,3}t|dont|do\s+not)\s+(?:really\s+)?(?:like|want|enjoy|care\s+for)|hate|dislike"
    r"|can\W{0,3}t\s+stand)\s+(?:those|them|these|that|it)(?:\s+(?:much|very\s+much|at\s+all|a\s+lot|ones|movies|films))?"
    r"\s*(?:[.!,;]|$)",  # the sentence ends there: "I don't like them too long" dislikes something else
    re.IGNORECASE,
)


def to_a_person(text: str) -> bool:
    """Whether a user turn speaks to a person rather than to a system (`TO_A_PERSON`)."""
    return bool(TO_A_PERSON.search(text))


def states_wishes(reading: TurnReading) -> bool:
    """Whether the turn states its values as what the user wants (a request cue, a film word, or a short turn
    of little else): "tell me a fun fact about the {genre}" names a value it does not ask films of."""
    if not any(role != "context" for _, _, role in reading.statements):
        return True
    words = re.sub(r"\{\w+\}", " ", reading.template).split()
    return len(words) <= _SHORT_WISH_WORDS or bool(_WISH_CUE.search(reading.template))


@dataclass(frozen=True)
class VoiceCorpus:
    """One corpus a voice learns from: its dialogues (session records in order), its name, and how many times
    each of its people counts in a draw (`weight`; 0 reads it and leaves it out)."""

    name: str
    dialogues: list[dict]
    weight: int = 1
    about: dict = field(default_factory=dict)  # shown in the summary: path, sha256, format
    keep: str = "all"  # "all" its turns, or LIKE_THE_VOICE: those that read like the voice's own corpus


def learn_voice(
    dialogues: list[dict],
    matcher: ConceptMatcher,
    source: dict,
    *,
    mix: tuple[VoiceCorpus, ...] = (),
    to_a_person_turns: str = "keep",
    weight: int = 1,
) -> Voice:
    """The voice of the user turns of `dialogues` (session records in order, the split corpus's part) and of
    the `mix` corpora: every turn read, typed and pooled, or left out with its reason; `source` (corpus,
    sha256, split) is kept in the summary. Each template records the cases of the replies it was said after
    (crseval.replies.cases) and whether it complains about a failure (crseval.replies.complaints).
    `to_a_person_turns`: "leave_out" leaves out the turns said to a person (`to_a_person`). CorpusError when
    no turn is kept: a voice without a template would word every turn by the rules."""
    learning = _Learning(matcher, to_a_person_turns == "leave_out")
    corpora = (VoiceCorpus(source.get("corpus", "corpus"), dialogues, weight), *mix)
    own = learning.read_corpus(corpora[0], prefix="")
    likeness = VoiceLikeness(own)
    for corpus in mix:
        learning.read_corpus(corpus, f"{corpus.name}:", likeness if corpus.keep == LIKE_THE_VOICE else None)
    if not learning.kept:
        reasons = "; ".join(f"{reason}: {count}" for reason, count in sorted(learning.left_out.items()))
        raise CorpusError(
            f"{source.get('corpus', 'the corpus')}: nothing to learn a voice from: {learning.read} user turns of "
            f"{sum(len(c.dialogues) for c in corpora)} dialogues read (the voice's part of the corpus), none kept"
            + (f" (left out: {reasons})" if reasons else "")
            + "; name a corpus whose user turns name the catalog's values and films, or another learn_part"
        )
    summary = {
        **source,
        "dialogues": len(dialogues),
        "turns_read": learning.read,
        "turns_kept": learning.kept,
        "left_out": dict(sorted(learning.left_out.items())),
        "acts": dict(sorted(learning.acts.items())),
        "templates": sum(len(p) for p in learning.pools.values()),
        "fitted": fitted_knobs(dialogues, mix),
        # a spelling one person used once may be the rules misreading them: a spelling is kept from two turns on
        "said_as": {
            key: dict(sorted((w, n) for w, n in forms.items() if n >= MIN_SAID))
            for key, forms in sorted(learning.said_as.items())
            if any(n >= MIN_SAID for n in forms.values())
        },
        "asked": {
            f: {v: sum(people.values()) for v, people in sorted(values.items())}
            for f, values in sorted(learning.asked.items())
        },
        # how people answered each case of reply (crseval.replies.cases): the acts of their later turns, each
        # turn counted its person's weight; the voice draws a reaction's act as often (voicing.keyed_on_the_reply)
        "acts_after": {case: dict(sorted(acts.items())) for case, acts in sorted(learning.acts_after.items())},
    }
    if mix:
        summary["corpora"] = [learning.corpus_counts[c.name] | {"weight": c.weight, **c.about} for c in corpora]
    return Voice(learning.pools_with_counts(), summary, PartPools.learn(learning.parts))


class _Learning:
    """The pools of a voice as its corpora are read, with what was counted (learn_voice)."""

    def __init__(self, matcher: ConceptMatcher, leave_out_to_a_person: bool):
        self.matcher = matcher
        self.leave_out_to_a_person = leave_out_to_a_person
        self.recognise = None if matcher is None else catalog_reader(matcher)
        self.pools: dict[str, list[VoiceTemplate]] = {}
        self.left_out: Counter = Counter()
        self.acts: Counter = Counter()
        self.read = 0
        # counted by person (the dialogue's user where the corpus names one, else the dialogue): one person
        # typing the same request three times to a system that does not understand is one person saying it
        self.said: dict[str, dict[str, dict[str, int]]] = {}  # pool key -> template text -> person -> weight
        self.after: dict[str, dict[str, set[str]]] = {}  # pool key -> template text -> reply cases before it
        self.complaint: dict[str, dict[str, bool]] = {}  # pool key -> template text -> a complaint
        self.said_as: dict[str, Counter] = {}  # "field|value" -> the words people wrote it with -> turns
        self.asked: dict[str, dict[str, dict[str, int]]] = {}  # field -> value -> person -> their weight
        self.corpus_counts: dict[str, dict] = {}
        self.parts: list[tuple[str, str, str, bool]] = []  # (act, template, person, first) of each kept turn
        self.acts_after: dict[str, Counter] = {}  # reply case -> act of the later turn after it -> weighted turns

    @property
    def kept(self) -> int:
        return sum(self.acts.values())

    def read_corpus(self, corpus: VoiceCorpus, prefix: str, likeness: VoiceLikeness | None = None) -> list[str]:
        """Every dialogue of `corpus` read and its kept turns pooled; with `likeness`, only the turns that read
        like the voice's own corpus (crseval.simulate.user.voice_likeness) are kept of it. Returns the templates
        of the turns kept."""
        counts = {"name": corpus.name, "dialogues": len(corpus.dialogues), "turns_read": 0, "turns_kept": 0}
        people = [prefix + speaker(dialogue) for dialogue in corpus.dialogues]
        readings = [
            [self._reading(visible_text(turn["user_text"]), corpus.weight) for turn in dialogue["turns"]]
            for dialogue in corpus.dialogues
        ]
        if likeness is not None:
            said = [(person, r.template) for person, rs in zip(people, readings) for r in rs if r is not None]
            keeps = iter(likeness.keeps(said))
            for rs in readings:
                for k, reading in enumerate(rs):
                    if reading is not None and not next(keeps):
                        rs[k] = None
                        self.left_out[UNLIKE_THE_VOICE] += 1
        for dialogue, person, dialogue_readings in zip(corpus.dialogues, people, readings):
            kept = self.read_dialogue(dialogue, dialogue_readings, person, corpus.weight)
            counts["turns_read"] += len(dialogue_readings)
            counts["turns_kept"] += kept
        self.read += counts["turns_read"]
        self.corpus_counts[corpus.name] = {**counts, "people": len(set(people))}
        return [r.template for rs in readings for r in rs if r is not None]

    def read_dialogue(self, dialogue: dict, readings: list, person: str, weight: int) -> int:
        """The turns kept of one dialogue (`readings`: each turn's reading, None where left out), each added to
        its pools."""
        turns = dialogue["turns"]
        frustrated = (dialogue.get("labels") or {}).get("satisfaction") == "frustrated"
        cases = session_reply_cases(dialogue, self.recognise) if turns and weight else [START] * len(turns)
        kept = 0
        for position, reading in enumerate(readings):
            if reading is None:
                continue
            kept += 1
            self.acts[reading.act] += 1
            if position:
                self.acts_after.setdefault(cases[position], Counter())[reading.act] += weight
            for (field_name, value, role), words in zip(reading.statements, reading.said_as):
                self.said_as.setdefault(f"{field_name}|{value}", Counter())[words] += 1
                if role == "wish":
                    self.asked.setdefault(field_name, {}).setdefault(value, {})[person] = weight
            keys = [pool_key(FIRST if position == 0 else LATER, reading.act, reading.slots)]
            if position == len(turns) - 1 and frustrated and not reading.slots and reading.act != "request":
                keys.append(pool_key(LEAVE, "", ()))  # how a dissatisfied user's dialogue ends
            complaint = complains(reading.text)
            for key in keys:
                self._add(key, reading, person, weight, cases[position], complaint)
            if not complaint:  # the openers and tails people said with the act, each person `weight` times
                self.parts += [(reading.act, reading.template, f"{person}#{k}", position == 0) for k in range(weight)]
        return kept

    def _reading(self, text: str, weight: int) -> TurnReading | None:
        """The reading of a turn to keep, or None: left out, counted by reason."""
        reason = None
        if not weight:
            reason = "a corpus of weight 0"
        elif not text:  # nothing a reader sees
            reason = "empty"
        elif len(text) > MAX_TEMPLATE_CHARS:  # longer than a person types; reading it back would be refused
            reason = f"over {MAX_TEMPLATE_CHARS:,} characters"
        elif "{" in text or "}" in text:
            reason = "braces (the slot marks)"
        elif self.leave_out_to_a_person and to_a_person(text):
            reason = "said to a person, not to a system"
        if reason:
            self.left_out[reason] += 1
            return None
        reading = read_turn(text, self.matcher)
        if reading.untyped:
            reason = reading.untyped
        elif len(reading.titles) != reading.template.count("{title}"):
            reason = "a film named twice or unreadably"
        elif _TITLE_YEAR.search(reading.template):
            reason = "a film's year read as a wish"
        elif not states_wishes(reading):
            reason = "a value named without asking for films of it"
        elif _DISLIKED_NEXT.search(reading.template):
            reason = "a value disliked in the next sentence"
        if reason:
            self.left_out[reason] += 1
            return None
        return reading

    def _add(self, key: str, reading: TurnReading, person: str, weight: int, case: str, complaint: bool) -> None:
        """The turn's template in pool `key`: the same words twice are one template, said by each person."""
        people = self.said.setdefault(key, {})
        if reading.template not in people:
            pool = self.pools.setdefault(key, [])
            pool.append(VoiceTemplate(f"{key}#{len(pool)}", reading.template, template_slots(reading)))
        people.setdefault(reading.template, {})[person] = weight
        self.after.setdefault(key, {}).setdefault(reading.template, set()).add(case)
        complaints = self.complaint.setdefault(key, {})
        complaints[reading.template] = complaints.get(reading.template, False) or complaint

    def pools_with_counts(self) -> dict[str, list[VoiceTemplate]]:
        """The pools, each template said as often as its people's weights add up to, with the reply cases it
        was said after and whether it complains."""
        return {
            key: [
                replace(
                    t,
                    said=sum(self.said[key][t.text].values()),
                    after=tuple(sorted(self.after[key][t.text])),
                    complaint=self.complaint[key][t.text],
                )
                for t in pool
            ]
            for key, pool in self.pools.items()
        }


def fitted_knobs(dialogues: list[dict], mix: tuple[VoiceCorpus, ...] = ()) -> dict:
    """The profile knobs the corpus shows, each with the statistic behind it (docs/simulation.md); with `mix`,
    the knobs of all the voice's corpora, each corpus's dialogues counted `weight` times."""
    from wordfreq import zipf_frequency  # a large word list, loaded only where a voice is learned

    dialogues = list(dialogues) + [d for corpus in mix for d in corpus.dialogues for _ in range(corpus.weight)]
    turns = [visible_text(t["user_text"]) for d in dialogues for t in d["turns"]]
    firsts = [visible_text(d["turns"][0]["user_text"]) for d in dialogues if d["turns"]]
    flags = [act_flags(t) for t in turns]
    frustrated = [len(d["turns"]) for d in dialogues if (d.get("labels") or {}).get("satisfaction") == "frustrated"]

    def share(hits: int, total: int, what: str) -> dict:
        return {"value": round(hits / total, 4) if total else None, "statistic": what, "n": total}

    lower = [t for t in turns if any(c.isalpha() for c in t)]
    return {
        "greeting": share(
            sum(act_flags(t)["greeting"] for t in firsts), len(firsts), "share of opening turns that greet"
        ),
        "thanks": share(sum(f["thanks"] for f in flags), len(turns), "share of user turns that thank"),
        "question": share(sum(f["question"] for f in flags), len(turns), "share of user turns with a question mark"),
        "lowercase": share(
            sum(t == t.lower() for t in lower), len(lower), "share of user turns with letters and no capital"
        ),
        "typo": share(
            sum(any(zipf_frequency(w, "en") == 0 for w in _UNKNOWN_WORD.findall(t)) for t in turns),
            len(turns),
            "share of user turns with a lower-case word no English word list holds",
        ),
        "patience": {
            "value": int(np.median(frustrated)) if frustrated else None,
            "statistic": "median user turns of the dialogues whose user was frustrated",
            "n": len(frustrated),
        },
    }


def voice_markdown(voice: Voice) -> str:
    """What the voice learned, for people: the split, the turns kept and left out (by reason), the templates
    per act and slot signature, and the fitted knobs with their statistics. No template text (they are a
    corpus's words)."""
    summary = voice.summary
    lines = [
        "# The learned voice",
        "",
        f"Corpus `{summary['corpus']}` (sha256 `{summary['corpus_sha256'][:16]}...`, format {summary['format']}): "
        f"{summary['dialogues']} dialogues of part {summary['learn_part']} of {summary['parts']} "
        f"({summary['held_out_dialogues']} held out for user realism). {summary['turns_read']} user turns read, "
        f"{summary['turns_kept']} kept as templates ({summary['templates']} distinct per pool).",
        "",
        "| left out because the turn names | turns |",
        "|---|---|",
    ]
    lines += [f"| {reason} | {count} |" for reason, count in summary["left_out"].items()] or ["| (none) | 0 |"]
    if summary.get("corpora"):
        lines += ["", "| corpus | weight | dialogues | people | user turns read | kept |", "|---|---|---|---|---|---|"]
        for c in summary["corpora"]:
            lines.append(
                f"| {c['name']} | {c['weight']} | {c['dialogues']} | {c['people']} | {c['turns_read']} "
                f"| {c['turns_kept']} |"
            )
    lines += ["", "| where | act | slots | templates |", "|---|---|---|---|"]
    for key, templates in sorted(voice.pools.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        position, act, slots = key.split("|")
        lines.append(f"| {position} | {act or '(leaving)'} | {slots or '-'} | {len(templates)} |")
    lines += ["", "| knob | fitted value | statistic | n |", "|---|---|---|---|"]
    for knob, fit in summary["fitted"].items():
        lines.append(f"| {knob} | {fit['value']} | {fit['statistic']} | {fit['n']} |")
    return "\n".join(lines) + "\n"
