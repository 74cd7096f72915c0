"""A voice learned from real dialogues (crseval.simulate.user.voice_learning): the user turns of one part of
`simulator.voice.corpus`, delexicalised and pooled by act, for the profiles that speak with it. In the
experiment when the config names the corpus."""

if VOICE_CORPUS:

    rule learn_voice:
        input:
            corpus=VOICE_CORPUS,
            mix=[path for paths in VOICE_MIX_FILES for path in paths],
            films=rules.index_catalog.output.films,
            concepts=rules.index_catalog.output.concepts,
        output:
            # named by the corpus's sha256 and the settings: another corpus or split is another voice
            voice=f"{RESULTS}/voice/learned-{VOICE_KEY}.json",
            summary=report(
                f"{RESULTS}/voice/learned-{VOICE_KEY}.md", caption="../report/voice.rst", category="User realism"
            ),
        log:
            f"{RESULTS}/logs/learn_voice.log",
        conda:
            ENV
        params:
            voice=config_slice("simulator", "voice"),
            corpus_sha256=VOICE_CORPUS_SHA256,
            mix_sha256=list(VOICE_MIX_SHA256),
            # the library code the script runs: an edit to it re-runs this rule (crseval.stage_digests)
            code=library_code("learn_voice.py"),
        script:
            "../scripts/learn_voice.py"

    rule user_audit:
        input:
            # the first trial of each simulated user
            shards=first_trial_shards(SESSION_SHARD),
            films=rules.index_catalog.output.films,
            concepts=rules.index_catalog.output.concepts,
            voice=rules.learn_voice.output.voice,
        output:
            table=f"{RESULTS}/stats/user_audit.csv",
            summary=report(
                f"{RESULTS}/stats/user_audit.md", caption="../report/user_audit.rst", category="User realism"
            ),
        log:
            f"{RESULTS}/logs/user_audit.log",
        conda:
            ENV
        params:
            # system name -> the user profile it met, for the shards in input.shards
            profiles=EXPERIMENT.profile_of,
            # the library code the script runs: an edit to it re-runs this rule (crseval.stage_digests)
            code=library_code("user_audit.py"),
        script:
            "../scripts/user_audit.py"
