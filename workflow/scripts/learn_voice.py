"""Rule learn_voice: the user turns of one part of a corpus of real dialogues, read, typed and pooled."""

import glob
import json
from pathlib import Path

import source_tree  # noqa: F401  (crseval from this source tree)

from crseval.catalog.index import CatalogIndex
from crseval.core.io import atomic_path, log_to
from crseval.language.concepts import ConceptMatcher
from crseval.simulate.user.voice_learning import (
    LIKE_THE_VOICE,
    VoiceCorpus,
    corpus_dialogues,
    learn_voice,
    split_dialogues,
    voice_markdown,
)

log = log_to(snakemake.log[0])
settings = json.loads(snakemake.params.voice)
corpus = Path(snakemake.input.corpus)

index = CatalogIndex.read(snakemake.input.films, snakemake.input.concepts)
matcher = ConceptMatcher(index.concepts, index.films)
dialogues = corpus_dialogues(corpus, settings["format"])
learned, held_out = split_dialogues(dialogues, settings["parts"], settings["learn_part"])
source = {
    "corpus": corpus.name,
    "corpus_sha256": snakemake.params.corpus_sha256,
    "format": settings["format"],
    "parts": settings["parts"],
    "learn_part": settings["learn_part"],
    "held_out_dialogues": len(held_out),
}
mix = tuple(
    VoiceCorpus(
        corpus["name"],
        corpus_dialogues(sorted(glob.glob(corpus["paths"])), corpus["format"]),
        corpus.get("weight", 1),
        {"format": corpus["format"], "sha256": sha},
        corpus.get("keep", LIKE_THE_VOICE),
    )
    for corpus, sha in zip(settings["mix"], snakemake.params.mix_sha256)
)
voice = learn_voice(
    learned, matcher, source, mix=mix, to_a_person_turns=settings["to_a_person"], weight=settings["weight"]
)
with atomic_path(snakemake.output.voice) as temporary:
    voice.write(temporary)
with atomic_path(snakemake.output.summary) as temporary:
    temporary.write_text(voice_markdown(voice), encoding="utf-8")
log.info(
    "voice of %d dialogues (part %d of %d): %d of %d turns kept, left out %s, %d templates",
    len(learned),
    settings["learn_part"],
    settings["parts"],
    voice.summary["turns_kept"],
    voice.summary["turns_read"],
    voice.summary["left_out"],
    voice.summary["templates"],
)
