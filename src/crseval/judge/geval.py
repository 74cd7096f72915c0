"""G-Eval: the judge's score weighted by its own probabilities of the scores (Liu et al., 2023).

A judge that writes "4" may have found 4 and 5 almost equally likely; sampling one digit throws
that away. Where the backend gives token probabilities, the G-Eval score of a criterion is the
expected score at the position where the judge wrote it,

    G = sum_s s p(s) / sum_s p(s),  s = 1..5,

with p(s) the summed probability of the tokens among the position's most likely ones that are the
digit s (whitespace aside: " 4" and "4" both write 4). Digits outside those top tokens count 0,
which the normalisation absorbs; the probabilities are the model's own, before the JSON grammar,
the temperature and top-p act on them.

The position: the reply is the JSON object the judge schema asks for, so its text is walked as JSON
(`score_offsets`), keeping the character offset of each `<criterion>.score` value, whatever the key
order or whitespace. The tokens' texts, laid end to end, spell the reply; the token that holds the
offset is the one whose top tokens are weighed. It must hold the digit alone (whitespace aside),
else the other digits at that position would be other texts, and the criterion's G-Eval is missing
with the reason.
"""

from __future__ import annotations

import math
import re
from json.decoder import scanstring

from crseval.judge.judge_columns import CRITERIA

SCORES = (1, 2, 3, 4, 5)
_WHITESPACE = re.compile(r"[ \t\n\r]*")
_SCALAR = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?|true|false|null")


class GEvalError(ValueError):
    """No G-Eval score for a criterion; the message says why."""


def score_offsets(reply: str) -> dict[str, int]:
    """Criterion -> character offset in `reply` of the first character of its score.

    `reply` is a judgement that parsed (crseval.judge.llm_judge.parse_judgement), perhaps inside a
    ```json fence: the object starts at its first "{".
    """
    start = reply.find("{")
    if start < 0:
        raise GEvalError("the reply holds no JSON object")
    found: dict[tuple, int] = {}
    _walk(reply, start, (), found)
    missing = [c for c in CRITERIA if (c, "score") not in found]
    if missing:
        raise GEvalError(f"no score found in the reply for {', '.join(missing)}")
    return {c: found[(c, "score")] for c in CRITERIA}


def _walk(text: str, i: int, path: tuple, found: dict) -> int:
    """Reads the JSON value at `i` (after whitespace), records where each scalar at `path` starts; returns its end."""
    i = _WHITESPACE.match(text, i).end()
    if i >= len(text):
        raise GEvalError("the reply ends inside its JSON object")
    if text[i] == "{":
        i = _WHITESPACE.match(text, i + 1).end()
        if text.startswith("}", i):
            return i + 1
        while True:
            if not text.startswith('"', i):
                raise GEvalError(f"a key was expected at character {i}")
            key, i = scanstring(text, i + 1)
            i = _WHITESPACE.match(text, i).end()
            if not text.startswith(":", i):
                raise GEvalError(f"':' was expected at character {i}")
            i = _WHITESPACE.match(text, _walk(text, i + 1, (*path, key), found)).end()
            if text.startswith(",", i):
                i = _WHITESPACE.match(text, i + 1).end()
            elif text.startswith("}", i):
                return i + 1
            else:
                raise GEvalError(f"',' or '}}' was expected at character {i}")
    if text[i] == "[":
        i = _WHITESPACE.match(text, i + 1).end()
        if text.startswith("]", i):
            return i + 1
        index = 0
        while True:
            i = _WHITESPACE.match(text, _walk(text, i, (*path, index), found)).end()
            index += 1
            if text.startswith(",", i):
                i += 1
            elif text.startswith("]", i):
                return i + 1
            else:
                raise GEvalError(f"',' or ']' was expected at character {i}")
    if text[i] == '"':
        return scanstring(text, i + 1)[1]
    scalar = _SCALAR.match(text, i)
    if not scalar:
        raise GEvalError(f"a JSON value was expected at character {i}")
    found[path] = i
    return scalar.end()


def _token_bytes(entry: dict) -> bytes:
    raw = entry.get("bytes")
    return bytes(raw) if isinstance(raw, list) else entry["token"].encode("utf-8")


def token_at(reply: str, offset: int, tokens: list[dict]) -> dict:
    """The token entry (OpenAI's chat format) whose text holds character `offset` of `reply`."""
    target = len(reply[:offset].encode("utf-8"))
    spelled = b"".join(_token_bytes(t) for t in tokens)
    whole = reply.encode("utf-8")
    # a reply cut at max_tokens may lack its last token's probabilities (crseval.llm.llamacpp_backend)
    if not (whole.startswith(spelled) or spelled.startswith(whole)):
        raise GEvalError("the tokens' texts do not spell the reply")
    position = 0
    for entry in tokens:
        end = position + len(_token_bytes(entry))
        if position <= target < end:
            return entry
        position = end
    raise GEvalError("the score lies past the tokens that have probabilities")


def expected_score(entry: dict) -> float:
    """sum_s s p(s) / sum_s p(s) over the digits 1-5 among the position's top tokens (and the token
    written there, which a server may leave out of them)."""
    if _digit(entry["token"]) is None:
        raise GEvalError(f"the score shares its token {entry['token']!r} with other text")
    candidates = [(t["token"], t["logprob"]) for t in entry.get("top_logprobs") or []]
    if entry["token"] not in {token for token, _ in candidates}:
        candidates.append((entry["token"], entry["logprob"]))
    probabilities = {s: 0.0 for s in SCORES}
    for token, logprob in candidates:
        if _digit(token) is not None:
            probabilities[_digit(token)] += math.exp(logprob)
    total = math.fsum(probabilities.values())
    if total <= 0:
        raise GEvalError("no digit 1-5 has a probability above 0 where the score was written")
    return math.fsum(s * p for s, p in probabilities.items()) / total


def _digit(token: str) -> int | None:
    """The score 1-5 a token writes on its own (whitespace aside), or None."""
    text = token.strip()
    return int(text) if len(text) == 1 and text in "12345" else None


def geval_scores(reply: str, tokens: list[dict] | None) -> tuple[dict[str, float], dict[str, str]]:
    """Criterion -> G-Eval score, and criterion -> why it is missing, for one parsed reply."""
    if tokens is None:
        return {}, {c: "the reply came without token probabilities" for c in CRITERIA}
    try:
        offsets = score_offsets(reply)
    except GEvalError as error:
        return {}, {c: str(error) for c in CRITERIA}
    scores, reasons = {}, {}
    for criterion in CRITERIA:
        try:
            scores[criterion] = expected_score(token_at(reply, offsets[criterion], tokens))
        except GEvalError as error:
            reasons[criterion] = str(error)
    return scores, reasons
