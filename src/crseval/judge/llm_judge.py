"""PEPPER-style LLM judge: proactiveness, coherence and personalization, integers 1-5.

The judge sees the whole conversation and a summary of what the user wanted, turn by turn:
for simulated sessions the simulator's gold constraints (wishes and exclusions; the shift's
bridge is context and not listed), for imported logs, which have no ground truth, the rule
tracker's reading of the user turns (with negation). The row records which
(`judge_preferences_source`). Its reply must be JSON matching
`JUDGE_SCHEMA`, which backends with structured output enforce while decoding; every reply is
also parsed strictly. A reply that does not parse gets one repair prompt, then up to `retries`
fresh attempts with other seeds; after that the session's judgement is recorded as missing with
the raw reply and the reason. No score is ever filled in.

Where the backend gives token probabilities (`top_logprobs` > 0), each criterion also gets its
G-Eval score (crseval.judge.geval), or the reason it has none. Several judges (`judge.panel`) are
several Judge objects, each named and writing its own columns (crseval.judge.judge_columns).
"""

from __future__ import annotations

import json
import math
import statistics
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import jsonschema

from crseval.core.fields import display
from crseval.judge.geval import geval_scores
from crseval.judge.judge_columns import (
    CRITERIA,
    column,
    geval_column,
    rationale_column,
    samples_column,
    score_column,
    spread_column,
)
from crseval.language.concepts import ConceptMatcher
from crseval.language.tracker import ConstraintTracker
from crseval.llm import LLMClient, LLMRequest, LLMResponse
from crseval.llm.base import clean_unicode
from crseval.llm.prompts import PromptTemplate

_CRITERION = {
    "type": "object",
    "additionalProperties": False,
    "required": ["score", "rationale"],
    "properties": {
        # the enum for decoders that turn the schema into a grammar and ignore bounds (llama-cpp-python's
        # writes "12" for Gemma otherwise): the score is then one of five single digits, one token
        "score": {"type": "integer", "minimum": 1, "maximum": 5, "enum": [1, 2, 3, 4, 5]},
        "rationale": {"type": "string", "minLength": 1, "maxLength": 80},
    },
}
JUDGE_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "required": list(CRITERIA),
    "properties": {c: _CRITERION for c in CRITERIA},
}
_VALIDATOR = jsonschema.Draft202012Validator(JUDGE_SCHEMA)


class JudgeParseError(ValueError):
    """The reply is not a valid judgement; the message says why."""


def parse_judgement(reply: str) -> dict[str, tuple[int, str]]:
    """criterion -> (score, rationale) from a reply; raises JudgeParseError, whatever the reply holds.

    The reason goes into the results table, so it is kept short and writable: replies are model
    output, and a model can send anything (a number too long for int, nesting deeper than the
    recursion limit, a 100 kB string, lone surrogates).
    """
    text = reply.strip() if isinstance(reply, str) else ""
    if text.startswith("```"):
        text = text.strip("`").removeprefix("json").strip()
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise JudgeParseError(f"not JSON ({error.msg} at character {error.pos})") from None
    except (ValueError, RecursionError) as error:  # an integer of thousands of digits, nesting too deep
        raise JudgeParseError(f"not JSON ({_short(str(error) or type(error).__name__)})") from None
    problems = sorted(_VALIDATOR.iter_errors(data), key=lambda e: [str(p) for p in e.path])
    if problems:
        first = problems[0]
        where = "/".join(str(p) for p in first.path) or "reply"
        raise JudgeParseError(_short(f"{where}: {first.message}"))
    for criterion in CRITERIA:
        if isinstance(data[criterion]["score"], bool):
            raise JudgeParseError(f"{criterion}/score: a boolean is not a score")
    # 4.0 passes the schema as an integer; rationales may hold lone surrogates from JSON escapes
    return {c: (int(data[c]["score"]), clean_unicode(data[c]["rationale"].strip())) for c in CRITERIA}


def _short(reason: str, limit: int = 240) -> str:
    """A reason cut to `limit` characters and made writable as UTF-8."""
    return clean_unicode(reason if len(reason) <= limit else reason[: limit - 1] + "…")


def preference_source(turns: list[dict]) -> str:
    """ "simulator" when every turn carries the simulator's ground truth, else "tracker"."""
    return "simulator" if turns and all(t.get("user_meta") for t in turns) else "tracker"


def preference_summary(turns: list[dict], matcher: ConceptMatcher) -> str:
    """What the user wanted after each turn where it changed: wishes, then exclusions."""
    if preference_source(turns) == "simulator":
        states = [[(c["field"], c["value"], c["negated"]) for c in t["user_meta"]["constraints"]] for t in turns]
    else:
        tracker = ConstraintTracker(matcher)
        states = [[(c.field, c.value, c.negated) for c in tracker.update(t["user_text"])] for t in turns]
    lines, previous = [], None
    for turn, state in zip(turns, states):
        if state == previous:
            continue
        previous = state
        wanted = "; ".join(f"{f} {display(f, v)}" for f, v, negated in state if not negated) or "nothing named"
        unwanted = "; ".join(f"{f} {display(f, v)}" for f, v, negated in state if negated)
        lines.append(f"- turn {turn['turn']}: wants {wanted}" + (f" | does not want {unwanted}" if unwanted else ""))
    return "\n".join(lines) or "- (the user named no catalog value)"


def conversation_text(turns: list[dict]) -> str:
    return "\n".join(f"User: {t['user_text']}\nSystem: {t['system_text'] or '(empty reply)'}" for t in turns)


@dataclass
class Judge:
    """One judge. `name` None is the first judge (columns `judge_<criterion>`), a name a panel judge's
    (`judge_<name>_<criterion>`). `top_logprobs` > 0 asks that many most likely tokens per position of
    the reply, for the G-Eval scores, of a backend that gives them."""

    client: LLMClient
    prompt: PromptTemplate
    matcher: ConceptMatcher
    options: dict
    samples: int
    retries: int
    seed: int
    name: str | None = None
    top_logprobs: int = 0

    @property
    def asks_token_logprobs(self) -> bool:
        return self.top_logprobs > 0 and getattr(self.client.backend, "gives_token_logprobs", False)

    def geval_unavailable(self) -> str | None:
        """Why no reply of this judge can have G-Eval scores, or None when they can."""
        if self.top_logprobs <= 0:
            return "no token probabilities asked for (top_logprobs is 0)"
        if not self.asks_token_logprobs:
            return f"the {self.client.backend.name} backend gives no token probabilities"
        return None

    def judge_sessions(self, records: list[dict], concurrency: int = 1) -> list[dict]:
        """One row per record, in record order. With `concurrency` > 1 that many sessions are judged
        at once (threads sharing the client): the rows are the same, only sooner. A failure that is
        not a judgement's (the server is down) stops the shard; replies already received stay cached."""
        if concurrency <= 1:
            return [self.judge_session(record) for record in records]
        with ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="judge") as pool:
            return list(pool.map(self.judge_session, records))

    def judge_session(self, record: dict) -> dict:
        """One row: mean, spread and every sample of each criterion, or the reason they are missing."""
        prompt = self.prompt.render(
            preferences=preference_summary(record["turns"], self.matcher),
            conversation=conversation_text(record["turns"]),
        )
        base_seed = self.seed * 100_003 + (record.get("session_index") or 0) * 101
        valid, failures, rationales, per_sample, gevals, geval_reasons = [], [], {}, [], [], {}
        for sample in range(self.samples):
            result, reason, reply = self._one_sample(prompt, base_seed + sample * 7919)
            if result is None:
                failures.append((reason, reply.text if reply else None))
                per_sample.append(None)
                continue
            valid.append({c: result[c][0] for c in CRITERIA})
            per_sample.append(valid[-1])
            if not rationales:
                rationales = {c: result[c][1] for c in CRITERIA}
            if not self.asks_token_logprobs:  # the row says why (geval_unavailable)
                continue
            weighted, missing = geval_scores(reply.text, reply.token_logprobs)
            gevals.append(weighted)
            for criterion, why in missing.items():
                geval_reasons.setdefault(why, []).append(criterion)
        row = {
            "system": record["system"],
            "session_id": record["session_id"],
            "session_index": record.get("session_index"),
            column("samples", self.name): self.samples,
            column("valid_samples", self.name): len(valid),
        }
        if self.name is None:
            row["judge_preferences_source"] = preference_source(record["turns"])
        for criterion in CRITERIA:
            scores = [v[criterion] for v in valid]
            row[score_column(criterion, self.name)] = statistics.fmean(scores) if scores else math.nan
            row[spread_column(criterion, self.name)] = statistics.stdev(scores) if len(scores) > 1 else math.nan
            row[rationale_column(criterion, self.name)] = rationales.get(criterion)
            # every sample's score in order (null where the sample failed): the agreement between samples
            row[samples_column(criterion, self.name)] = json.dumps([s[criterion] if s else None for s in per_sample])
            weighted = [g[criterion] for g in gevals if criterion in g]
            row[geval_column(criterion, self.name)] = statistics.fmean(weighted) if weighted else math.nan
        row[column("missing_reason", self.name)] = None if valid else failures[-1][0]
        row[column("raw_reply", self.name)] = None if valid else failures[-1][1]
        row[column("geval_missing_reason", self.name)] = self._geval_reason(valid, geval_reasons)
        return row

    def _geval_reason(self, valid: list, reasons: dict[str, list[str]]) -> str | None:
        """Why some G-Eval score of the session is missing (None when none is): the backend's, or
        each reason with the criteria (once per sample) it left without one."""
        if not valid:
            return "no valid judgement"
        if self.geval_unavailable():
            return self.geval_unavailable()
        if not reasons:
            return None
        return _short("; ".join(f"{', '.join(dict.fromkeys(who))}: {why}" for why, who in reasons.items()))

    def _one_sample(self, prompt: str, seed: int) -> tuple[dict | None, str | None, LLMResponse | None]:
        """(judgement, None, reply), or (None, reason, last reply) after the repair prompt and the retries."""
        reason = last = None
        for attempt in range(1 + self.retries):
            messages = [{"role": "user", "content": prompt}]
            last = self._ask(messages, seed + attempt)
            try:
                return parse_judgement(last.text), None, last
            except JudgeParseError as error:
                reason = str(error)
            if attempt == 0:  # one repair prompt: show the model its reply and what is wrong
                repair = messages + [
                    {"role": "assistant", "content": last.text},
                    {
                        "role": "user",
                        "content": f"That reply is not valid ({reason}). Answer again with the JSON object only.",
                    },
                ]
                last = self._ask(repair, seed)
                try:
                    return parse_judgement(last.text), None, last
                except JudgeParseError as error:
                    reason = f"after repair: {error}"
        return None, reason, last

    def _ask(self, messages: list[dict], seed: int) -> LLMResponse:
        request = LLMRequest.sampled(
            messages,
            self.options,
            seed=seed,
            json_schema=JUDGE_SCHEMA,
            tag=f"{self.prompt.path.name}@{self.prompt.version}",
            top_logprobs=self.top_logprobs if self.asks_token_logprobs else 0,
        )
        return self.client.complete(request)
