"""How far simulated user turns are from real users' turns: population statistics, discriminators, flow.

Three views, as ConvApparel measures simulators against real conversations:
- population statistics of the user turns, each with the simulated and the real value and the
  difference between them, with a percentile bootstrap CI over sessions (a session's turns are
  resampled together): words per turn (median); the shares of turns that ask, greet, thank, are only
  small talk, hold a word no English word list knows (a typo, mostly), take a film, turn one down or ask
  about it (the same rules read both sides: crseval.language.user_acts, which the learned voice reads
  turns with too), and, given the catalog, name one of its films or values
  (`TURN_STATISTICS`); per session, the turns and the variety of words (Guiraud's index: distinct
  words / sqrt(words), which depends on a session's length less than their ratio);
- a discriminator: how well a classifier tells a simulated turn from a real one, as the
  cross-validated ROC AUC (0.5: indistinguishable, 1.0: always told apart) of a logistic regression
  on word n-grams, character n-grams, or the turn statistics, over folds that never split a person
  (`person_folds`); its CI is a bootstrap of people (`person_auc_interval`), DeLong's beside it; the
  n-grams that give each side away most are listed, so that a developer of the simulator sees what to
  change. Both sides show it equal numbers of turns drawn as whole people (`equal_samples`), as the floor
  of real users against real users is measured; how often a user repeats a turn word for word is a
  statistic of its own (`distinct_turns`, on the same samples). The word and character discriminators
  run a second time on content-blind text (`content_blind`: every catalog value and title replaced by a
  word naming its slot type, on both sides): how the user talks apart from what it talks about; the word
  discriminators run at three volumes (`VOLUMES`: each person once, the floor's number of turns, every
  session pooled) and on the turns of each person once matched by what they say (`matched_sample`: the
  act, the fields and roles stated, a greeting), where only the wording can tell the user apart;
- how sessions flow: the share of each act (crseval.language.user_acts.read_turn, `ACTS`), the
  Jensen-Shannon distance between the act-bigram distributions of simulated and real sessions (a start and
  an end marker around each session's acts), the distance between the acts that follow each case of system
  reply (`reply_act_distance`, crseval.replies.cases), turns per session, and how sessions end (the act of
  the last user turn; for simulated sessions also whether the user left or the turn limit ended it).

Every random choice (bootstrap, folds) takes a seed. AUCs and differences are reported, never
thresholded here.

This module is the check's entry point, the names the rule script (workflow/scripts/user_realism.py), the
audit and the benchmark use; the work is done in:
- crseval.checks.realism_turns: the user turns compared, with their people and reply cases, each simulated
  person counted once and every session pooled (`gather_simulated`, `simulated_turns`);
- crseval.checks.realism_reference: the real side, held out from the learned voice by construction
  (`load_reference`), bounded in size (`MAX_REFERENCE_BYTES`, `MAX_REFERENCE_DIALOGUES`);
- crseval.checks.realism_measures: the statistics per turn and per session, their bootstrap over sessions in
  bounded memory (`BOOTSTRAP_BLOCK`, `MAX_TURN_WORDS`), act bigrams and their Jensen-Shannon distance, the
  acts given the system's reply;
- crseval.checks.realism_discriminators: the discriminators, folds grouped by person, their AUC and its CI
  over people, on equal samples of whole people;
- crseval.checks.realism_volumes: the three volumes a user is discriminated at;
- crseval.checks.realism_report: every user against the real users as a table and as Markdown.
"""

from __future__ import annotations

from crseval.checks.realism_discriminators import (
    BLIND_DISCRIMINATORS,
    DISCRIMINATORS,
    TooFewPeople,
    content_blind,
    discriminator,
    distinct_share,
    draw_people,
    equal_samples,
    person_auc_interval,
    person_folds,
)
from crseval.checks.realism_measures import (
    ENDINGS,
    MAX_TURN_WORDS,
    MIN_SESSIONS,
    SESSION_STATISTICS,
    TURN_STATISTICS,
    act_bigram_distance,
    act_bigrams,
    compare_statistics,
    guiraud,
    js_distance,
    reply_act_distance,
    turn_statistics,
)
from crseval.checks.realism_reference import (
    DEALT,
    FLOOR,
    MAX_REFERENCE_BYTES,
    MAX_REFERENCE_DIALOGUES,
    Reference,
    ReferenceTooLarge,
    dealt_to_others,
    load_reference,
    real_person,
    reference_turns,
)
from crseval.checks.realism_report import realism_markdown, realism_table
from crseval.checks.realism_turns import (
    SimulatedUsers,
    UserTurns,
    gather_simulated,
    reply_case_reader,
    simulated_turns,
)
from crseval.checks.realism_volumes import (
    MATCHED,
    VOLUMES,
    floor_size,
    matched_sample,
    session_rounds,
    volume_samples,
    what_is_said,
)

__all__ = [
    "BLIND_DISCRIMINATORS",
    "DEALT",
    "DISCRIMINATORS",
    "ENDINGS",
    "FLOOR",
    "MATCHED",
    "MAX_REFERENCE_BYTES",
    "MAX_REFERENCE_DIALOGUES",
    "MAX_TURN_WORDS",
    "MIN_SESSIONS",
    "SESSION_STATISTICS",
    "TURN_STATISTICS",
    "VOLUMES",
    "Reference",
    "ReferenceTooLarge",
    "SimulatedUsers",
    "TooFewPeople",
    "UserTurns",
    "act_bigram_distance",
    "act_bigrams",
    "compare_statistics",
    "content_blind",
    "dealt_to_others",
    "discriminator",
    "distinct_share",
    "draw_people",
    "equal_samples",
    "floor_size",
    "gather_simulated",
    "guiraud",
    "js_distance",
    "load_reference",
    "matched_sample",
    "person_auc_interval",
    "person_folds",
    "real_person",
    "realism_markdown",
    "realism_table",
    "reference_turns",
    "reply_act_distance",
    "reply_case_reader",
    "session_rounds",
    "simulated_turns",
    "turn_statistics",
    "volume_samples",
    "what_is_said",
]
