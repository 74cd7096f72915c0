"""Grammar-held sampling for the embedded models that checks the grammar on the sampled token first.

llama-cpp-python puts a JSON grammar at the front of its sampler chain, so at every position of a reply
llama.cpp checks each of the vocabulary's tokens against the grammar (151,646 for Qwen): measured on the
judge's replies on two threads, 17 ms a token against 25 ms for the model itself. `LazyGrammarSampler`
samples as llama.cpp's own command-line tools do: first with the chain without the grammar; when the token
it draws is one the grammar allows (nearly always: the model sees the JSON it has written), that token is
taken; otherwise the chain with the grammar first draws again from every token. A reply is therefore
always held to the grammar. The two chains are seeded alike, so a request's reply stays a function of its
seed; the draws differ from a grammar-first chain's, so replies differ from those it gave.
"""

from __future__ import annotations

import ctypes
import math

import llama_cpp


class LazyGrammarSampler:
    """Stands in for llama-cpp-python's LlamaSampler in `Llama.sample`: `free` is the chain without the grammar
    (with any logits processor, which so sees each position once), `held` the same chain with the grammar
    first. Counts the positions (`tokens`) and those `held` had to sample (`redrawn`)."""

    def __init__(self, free, held):
        self.free, self.held = free, held
        chain = held.sampler
        members = [llama_cpp.llama_sampler_chain_get(chain, i) for i in range(llama_cpp.llama_sampler_chain_n(chain))]
        grammars = [m for m in members if llama_cpp.llama_sampler_name(m) == b"grammar"]
        if len(grammars) != 1:
            raise RuntimeError(f"expected one grammar in the sampler chain, found {len(grammars)}")
        self.grammar = grammars[0]
        self._one = (llama_cpp.llama_token_data * 1)()
        self.tokens = self.redrawn = 0

    def sample(self, ctx, idx: int = -1) -> int:
        self.tokens += 1
        token = self.free.sample(ctx, idx)
        if self.allows(token):
            self.held.accept(token)  # the grammar moves on past the token
            return token
        self.redrawn += 1
        return self.held.sample(ctx, idx)  # the grammar first, then the chain; accepts its token

    def allows(self, token: int) -> bool:
        """Whether the grammar, in its present state, allows `token` next."""
        self._one[0] = llama_cpp.llama_token_data(token, 0.0, 0.0)
        candidates = llama_cpp.llama_token_data_array(self._one, 1, -1, False)
        llama_cpp.llama_sampler_apply(self.grammar, ctypes.byref(candidates))
        return math.isfinite(candidates.data[0].logit)


class LazyGrammarLlama(llama_cpp.Llama):
    """llama_cpp.Llama whose grammar-held sampling is a LazyGrammarSampler."""

    def _init_sampler(self, *, grammar=None, logits_processor=None, **options):
        if grammar is None:
            return super()._init_sampler(grammar=None, logits_processor=logits_processor, **options)
        free = super()._init_sampler(grammar=None, logits_processor=logits_processor, **options)
        held = super()._init_sampler(grammar=grammar, logits_processor=None, **options)
        return LazyGrammarSampler(free, held)
