"""How real is the simulated user: its turns against the user turns of a corpus of real dialogues, per user
profile and per system it talked to, per person (crseval.checks.user_realism). In the experiment when
`simulator.realism.reference` names the corpus; when it is the learned voice's corpus, against the
dialogues the voice did not learn from (simulator.voice)."""

if REALISM_REFERENCE:

    rule user_realism:
        input:
            # every session of every trial: a user's own rows keep each simulated person once (one session of
            # the seed's sessions with every system and trial), the pooled volume counts them all
            shards=per_shard(SESSION_SHARD),
            reference=REALISM_REFERENCE,
            # the learned voice's corpus: the real side is held out from the part it learned from
            voice_corpus=VOICE_CORPUS or [],
            films=rules.index_catalog.output.films,
            concepts=rules.index_catalog.output.concepts,
        output:
            table=f"{RESULTS}/stats/user_realism.csv",
            summary=report(
                f"{RESULTS}/stats/user_realism.md", caption="../report/user_realism.rst", category="User realism"
            ),
            png=report(
                f"{RESULTS}/figures/user_realism.png",
                caption="../report/user_realism_figure.rst",
                category="User realism",
            ),
            svg=f"{RESULTS}/figures/user_realism.svg",
        log:
            f"{RESULTS}/logs/user_realism.log",
        conda:
            ENV
        params:
            realism=config_slice("simulator", "realism"),
            voice=config_slice("simulator", "voice"),
            stats=config_slice("stats"),
            # system name -> the user profile it met, for the shards in input.shards
            profiles=EXPERIMENT.profile_of,
            # the library code the script runs: an edit to it re-runs this rule (crseval.stage_digests)
            code=library_code("user_realism.py"),
        script:
            "../scripts/user_realism.py"
