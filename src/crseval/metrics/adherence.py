"""Topic adherence (RAGAS-style): do the system's topics stay on the reference topics?

Reference topics are the simulator's focus values (per session: every focus of the session;
per segment: that segment's focus). The system's topics are the catalog concepts its turns
mention (or, with the LLM extractor, the topic strings an LLM lists for them). A topic is on
topic when it is a reference topic (LLM topics: when one contains the other, ignoring case).
  precision = on-topic topics / extracted topics    (NaN when nothing was extracted)
  recall    = reference topics covered / reference topics
A system's topic it names only in words copied from its own prompt (crseval.metrics.grounded) is extracted
but neither on topic nor covering (with the catalog extractor).
  f1        = harmonic mean (0 when either is 0 or precision is NaN)
"""

from __future__ import annotations

import math

from crseval.core.columns import Column
from crseval.metrics.basic import safe_mean
from crseval.metrics.expectations import ADAPTATION, ECHO, ECHO_REASON, Expectation, column_named, prompt_echo
from crseval.metrics.family import FamilyKind, never, no_figure_params, no_figures, no_problems, no_settings

NAN = math.nan

SESSION_COLUMNS = tuple(
    Column(f"adherence_{scope}{kind}", f"topic adherence {label}{where}", "0-1", True, ground_truth=True)
    for scope, where in (("", ""), ("segment_", " (segment mean)"))
    for kind, label in (("precision", "precision"), ("recall", "recall"), ("f1", "F1"))
)


def _matches(topic, reference) -> bool:
    if isinstance(topic, tuple):
        return topic == reference
    return reference[1].lower() in topic.lower() or topic.lower() in reference[1].lower()


def adherence(extracted: set, references: set, credited: set | None = None) -> tuple[float, float, float]:
    """`credited`: the extracted topics that count as on topic and covering (the reply's own concepts, not
    those copied from its prompt: crseval.metrics.grounded); all of `extracted` when None."""
    if not references:
        return NAN, NAN, NAN
    own = extracted if credited is None else credited
    on_topic = [t for t in own if any(_matches(t, r) for r in references)]
    covered = [r for r in references if any(_matches(t, r) for t in own)]
    precision = len(on_topic) / len(extracted) if extracted else NAN
    recall = len(covered) / len(references)
    f1 = 0.0 if math.isnan(precision) or precision + recall == 0 else 2 * precision * recall / (precision + recall)
    return precision, recall, f1


def score_session(turns: list[dict], system_topics: list[set], credited: list[set] | None = None) -> dict:
    """`system_topics[i]`: topics of system turn i, as (field, value) concepts or strings; `credited[i]`: those
    of them that count as on topic (the reply's own, not copied from its prompt), when not all do."""
    if not all(t.get("user_meta") for t in turns):
        return {column.name: NAN for column in SESSION_COLUMNS}
    focus = [(t["user_meta"]["focus_field"], t["user_meta"]["focus_value"]) for t in turns]

    def own(a: int, b: int) -> set | None:
        return None if credited is None else set().union(*credited[a:b])

    session = adherence(set().union(*system_topics) if system_topics else set(), set(focus), own(0, len(turns)))
    starts = [0] + [i for i, t in enumerate(turns) if t["user_meta"]["shift_event"]] + [len(turns)]
    segments = [
        adherence(set().union(*system_topics[a:b]), {focus[a]}, own(a, b)) for a, b in zip(starts, starts[1:]) if b > a
    ]
    return {
        "adherence_precision": session[0],
        "adherence_recall": session[1],
        "adherence_f1": session[2],
        "adherence_segment_precision": safe_mean(s[0] for s in segments),
        "adherence_segment_recall": safe_mean(s[1] for s in segments),
        "adherence_segment_f1": safe_mean(s[2] for s in segments),
    }


class AdherenceFamily:
    """Topic adherence against the simulator's focus values (registered as `adherence`); system topics
    from the catalog extractor, or from an LLM with `scoring.adherence.extractor: llm`."""

    name = "adherence"
    session_columns = SESSION_COLUMNS
    turn_columns = ()

    def __init__(self, context):
        section = KIND.settings(context.settings)
        self.space = context.space
        self.prompt = context.prompt
        self.topics = None
        if section["extractor"] == "llm":
            self.topics = context.llm_topics(section)

    def score_shard(self, records: list[dict]) -> list[tuple[dict, list[dict]]]:
        llm_topics = {}
        if self.topics is not None:
            system_texts = list(dict.fromkeys(t["system_text"] for r in records for t in r["turns"]))
            llm_topics = dict(zip(system_texts, self.topics(system_texts)))
        scores = []
        for record in records:
            systems = [t["system_text"] for t in record["turns"]]
            credited = None
            if self.topics is None:
                system_topics = [set(self.space.mentions(s)) for s in systems]
                if self.prompt is not None:  # what a reply copies from its prompt is not on topic (grounded)
                    prompts = [self.prompt.of_turn(t, self.space) for t in record["turns"]]
                    credited = [set(self.space.credited(s, p)[1]) for s, p in zip(systems, prompts)]
            else:
                system_topics = [set(llm_topics[s]) for s in systems]
            scores.append((score_session(record["turns"], system_topics, credited), []))
        return scores


def backends(scoring: dict) -> dict[str, dict]:
    """The LLM that lists a reply's topics with `extractor: llm`."""
    section = scoring.get("adherence", {})
    return {"scoring.adherence": section["llm"]["backend"]} if section.get("extractor") == "llm" else {}


F1 = column_named(SESSION_COLUMNS, "adherence_f1")
SEGMENT_F1 = column_named(SESSION_COLUMNS, "adherence_segment_f1")
# The session's F1 pools the session's foci (every focus of the session against every topic of every reply): a
# system that names a focus k turns late names a value of the session's foci all the same, so it cannot see a lag
# when the user's shifts stay within one field (crseval.checks.validity). Per segment, each segment's replies
# are held against that segment's focus: a lag shows there, and adaptation is judged there too.
EXPECTATIONS = (
    Expectation(F1, ADAPTATION, "replies name the current focus values, as for TAS", pools_foci=True),
    Expectation(F1, ECHO, ECHO_REASON, "echo", pools_foci=True),
    prompt_echo(F1, pools_foci=True),
    Expectation(
        SEGMENT_F1,
        ADAPTATION,
        "each segment's replies are held against that segment's focus: the oracle names it from the shift on, "
        "lag-k k turns late, the stubborn system in the first segment only, random never",
    ),
    Expectation(SEGMENT_F1, ECHO, ECHO_REASON, "echo"),
    prompt_echo(SEGMENT_F1),
)

KIND = FamilyKind(
    name="adherence",
    summary="topic adherence (RAGAS-style) of the system's topics to the simulator's focus values",
    scorer=AdherenceFamily,
    parse_settings=dict,  # `extractor` and, with `extractor: llm`, `llm`: read as given
    backends=backends,
    embedding_users=no_settings,
    reads_lda=never,
    checks=no_problems,
    expectations=EXPECTATIONS,
    headline=("adherence_f1",),
    figures=no_figures,
    scatter_columns=no_settings,
    distribution_columns=(),
    figure_params=no_figure_params,
)
