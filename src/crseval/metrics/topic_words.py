"""Topic-word extractors for the legacy CAS: at most five topic words per utterance.

- `lda`: the top words of the utterance's most probable LDA topic (the `train_lda` model).
- `heuristic`: the utterance's own content words ranked by frequency times their IDF over the
  catalog plots (rare, repeated words first), ties alphabetical.
- `llm`: an LLM asked for a JSON list of at most five topics (schema-constrained output).
Each extractor works on a batch and infers every distinct text once.
"""

from __future__ import annotations

import json
import math
from collections import Counter

from crseval.catalog.topics import TopicModel
from crseval.language.text import content_words
from crseval.llm import LLMClient, LLMError, LLMRequest
from crseval.llm.prompts import PromptTemplate

MAX_TOPICS = 5


class LdaTopics:
    def __init__(self, model: TopicModel):
        self.model = model
        self._cache: dict[str, list[str]] = {}
        model.settings.tokens("films")  # loads the lemmatiser's dictionary now, at set-up, not in the first shard

    def __call__(self, texts: list[str]) -> list[list[str]]:
        new = [t for t in dict.fromkeys(texts) if t not in self._cache]
        for text, words in zip(new, self.model.topics_batch(new)):
            self._cache[text] = words[:MAX_TOPICS]
        return [list(self._cache[t]) for t in texts]


class HeuristicTopics:
    def __init__(self, plots: list[str]):
        documents = [set(content_words(p)) for p in plots]
        df = Counter(w for words in documents for w in words)
        n = len(documents)
        self.idf = {w: math.log((1 + n) / (1 + c)) + 1 for w, c in df.items()}
        self.unknown_idf = math.log(1 + n) + 1

    def __call__(self, texts: list[str]) -> list[list[str]]:
        result = []
        for text in texts:
            counts = Counter(content_words(text))
            ranked = sorted(counts, key=lambda w: (-counts[w] * self.idf.get(w, self.unknown_idf), w))
            result.append(ranked[:MAX_TOPICS])
        return result


TOPICS_SCHEMA = {"type": "array", "items": {"type": "string", "minLength": 1, "maxLength": 40}, "maxItems": MAX_TOPICS}


class LlmTopics:
    """Topics from an LLM. A reply that is not a JSON list of strings fails the job with the
    text named; nothing is guessed."""

    def __init__(self, client: LLMClient, options: dict, prompt: PromptTemplate):
        self.client = client
        # topics are read, not sampled: temperature 0 whatever the options say; top_p 1 unless they give one
        self.sampling = {"top_p": 1.0, **options, "temperature": 0.0}
        self.prompt = prompt  # resources/prompts/topics.txt, with a {text} slot
        self._cache: dict[str, list[str]] = {}

    def __call__(self, texts: list[str]) -> list[list[str]]:
        for text in dict.fromkeys(texts):
            if text in self._cache:
                continue
            if not text.strip():
                self._cache[text] = []
                continue
            request = LLMRequest.sampled(
                [{"role": "user", "content": self.prompt.render(text=text)}],
                self.sampling,
                seed=0,
                json_schema=TOPICS_SCHEMA,
                tag=f"topics@{self.prompt.version}",
            )
            reply = self.client.complete(request).text
            try:
                topics = json.loads(reply)
                if not isinstance(topics, list) or not all(isinstance(t, str) for t in topics):
                    raise ValueError("not a list of strings")
            except ValueError as error:
                raise LLMError(f"topic extraction: unusable reply {reply!r} for text {text[:80]!r}: {error}") from error
            self._cache[text] = [t.strip().lower() for t in topics if t.strip()][:MAX_TOPICS]
        return [list(self._cache[t]) for t in texts]
