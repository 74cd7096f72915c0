"""The simulated user's turns reworded by an LLM (`simulator.paraphrase`), checked before they are sent.

The prompt is a file of the project (resources/prompts/paraphrase.txt; the simulate rule reads it, so
an edit to it re-runs the sessions that use it). Its `[examples] ... [/examples]` block is shown only
when the rewording takes examples from the learned voice; without examples the prompt is the rest of
the file, byte for byte.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from crseval.language.concepts import ConceptMatcher
from crseval.language.user_acts import read_turn
from crseval.llm import LLMClient, LLMRequest
from crseval.simulate.user.voice import FIRST, LATER, Voice

_STRUCTURE = re.compile(r"[{}\[\]]|': '|\": \"")
_EXAMPLES_BLOCK = re.compile(r"\[examples\]\n(.*?)\n\[/examples\]\n\n", re.S)
MAX_PROMPT_BYTES = 64_000  # a prompt file is a paragraph or two; more is a wrong path


def has_structure(text: str) -> bool:
    """Whether a text carries a Python/JSON structure (braces, brackets, quoted key: value)."""
    return bool(_STRUCTURE.search(text))


class ParaphrasePrompt:
    """The rewording prompt read from its file: the message in `{text}`, and the block of examples
    (`{examples}`, one per line) between `[examples]` and `[/examples]`, shown only with examples."""

    def __init__(self, text: str, source: str = "the paraphrase prompt"):
        block = _EXAMPLES_BLOCK.search(text)
        if block is None or "{text}" not in text or "{examples}" not in block.group(1):
            raise ValueError(
                f"{source} needs a {{text}} slot and an [examples] ... [/examples] block (followed by a blank line) "
                "with an {examples} slot"
            )
        self._plain = text[: block.start()] + text[block.end() :]
        self._with_examples = text[: block.start()] + block.group(1) + "\n\n" + text[block.end() :]

    @classmethod
    def read(cls, path: str | Path) -> ParaphrasePrompt:
        path = Path(path)
        if path.stat().st_size > MAX_PROMPT_BYTES:
            raise ValueError(f"{path}: a paraphrase prompt of more than {MAX_PROMPT_BYTES:,} bytes")
        return cls(path.read_text(encoding="utf-8").rstrip("\n"), str(path))

    def render(self, text: str, examples: list[str]) -> str:
        if not examples:
            return self._plain.replace("{text}", text)
        shown = "\n".join(f"- {example}" for example in examples)
        return self._with_examples.replace("{examples}", shown, 1).replace("{text}", text)


class Paraphraser:
    """Optional LLM rewording of user turns. The rewording is kept only when every catalog value
    and title the template named is still in it, verbatim (ignoring case), and it carries no
    structure; otherwise the template text stays and the turn is flagged.

    With `examples` k > 0 and a learned `voice`, the prompt also shows k real user turns of the act the
    turn reads as (crseval.language.user_acts.read_turn with `matcher`), drawn from the voice's pools with
    a stream of the turn's seed, each slot shown as a bracketed type word ("[genre]"): people's style, none
    of their values. The prompt, and so the reply cache key, is then pinned by the seed; with k = 0 it is
    the prompt without examples, byte for byte."""

    EXAMPLES_STREAM = 0xE4A  # the examples' draw: a stream of the turn's seed of its own

    def __init__(
        self,
        client: LLMClient,
        options: dict,
        examples: int = 0,
        voice: Voice | None = None,
        matcher: ConceptMatcher | None = None,
        *,
        prompt: ParaphrasePrompt,
    ):
        self.client = client
        self.template = prompt
        self.options = options
        self.examples = examples
        self.matcher = matcher
        if examples and (voice is None or matcher is None):
            raise ValueError("paraphrase examples need the learned voice and the matcher that reads a turn's act")
        # per act, the distinct shown texts of its templates (first and later turns) and the id of each
        self.pools: dict[str, list[tuple[str, str]]] = {}
        if examples:
            for key, templates in sorted(voice.pools.items()):
                position, act, _ = key.split("|")
                if position not in (FIRST, LATER):
                    continue
                shown = self.pools.setdefault(act, [])
                texts = {text for _, text in shown}
                for template in templates:
                    text = _bracketed(template.text)
                    if text not in texts:
                        texts.add(text)
                        shown.append((template.id, text))

    def choose_examples(self, text: str, seed: int) -> list[tuple[str, str]]:
        """The (template id, shown text) of the examples for the turn `text` of `seed`: up to k of its act's
        pools, without repeats; none with k = 0 or where the voice has no turn of the act."""
        if not self.examples:
            return []
        pool = self.pools.get(read_turn(text, self.matcher).act, [])
        if not pool:
            return []
        rng = np.random.default_rng([seed, self.EXAMPLES_STREAM])
        chosen = rng.choice(len(pool), size=min(self.examples, len(pool)), replace=False)
        return [pool[int(i)] for i in chosen]

    def prompt(self, text: str, examples: list[tuple[str, str]]) -> str:
        return self.template.render(text, [example for _, example in examples])

    def __call__(self, text: str, required: list[str], seed: int) -> tuple[str, str, dict, list[str]]:
        """The turn as sent, the verdict, the call's record, and the ids of the examples shown."""
        examples = self.choose_examples(text, seed)
        request = LLMRequest.sampled(
            [{"role": "user", "content": self.prompt(text, examples)}],
            self.options,
            seed=seed,
            tag="paraphrase+examples@1" if examples else "paraphrase@1",
        )
        response = self.client.complete(request)
        candidate = response.text.strip().strip('"').strip()
        missing = [value for value in required if value.lower() not in candidate.lower()]
        ids = [template_id for template_id, _ in examples]
        if not candidate or missing or has_structure(candidate):
            return text, "rejected", response.meta(), ids
        return candidate, "kept", response.meta(), ids


def _bracketed(template: str) -> str:
    """A voice template as an example: each slot ("{plot_keyword}") a bracketed type word ("[plot keyword]")."""
    return re.sub(r"\{(\w+)\}", lambda m: "[" + m.group(1).replace("_", " ") + "]", template)
