"""The simulated user: what it wants and when that shifts, how it words a turn, and whose voice it speaks in.

`simulator` (the rule-based user that shifts its focus on purpose and records the ground truth of every
turn), `profiles` (behaviour profiles: disclosure of each wish, terse talk, patience; built in or defined
in the config), `voice` (a voice learned from real dialogues: templates pooled by act and slots) and
`voice_learning` (learning one from a corpus's user turns). Reads the user templates, the catalog index
and a learned voice; writes nothing itself: `crseval.simulate.sessions` records what the user says.
"""
