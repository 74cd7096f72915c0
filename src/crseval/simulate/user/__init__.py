"""The simulated user: what it wants and when that shifts, how it words a turn, and whose voice it speaks in.

`simulator` (the user put together from the parts below, each with a random stream of the session's seed
of its own; it records the ground truth of every turn), `user_plan` (what the user wants and when that
shifts: the opening, shifts, contradictions, and which wishes it discloses when), `turn_content` (what a
turn says before it is worded, and the conduct of a profile that shapes it), `wording` (a turn said from
the user templates, and the read-back that keeps the ground truth exact), `templates` (the templates file
and its checks), `voicing` (a turn said in the learned voice), `profiles` (behaviour profiles: disclosure
of each wish, terse talk, patience; built in or defined in the config), `voice` (a voice learned from real
dialogues: templates pooled by act and slots), `voice_learning` (learning one from a corpus's user turns)
and `paraphrase` (turns reworded by an LLM and checked). Reads the user templates, the catalog index and a
learned voice; writes nothing itself: `crseval.simulate.sessions` records what the user says.
"""
