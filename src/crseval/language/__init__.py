"""Reading text: words, catalog values, film titles and constraints in what users and systems say.

Reads the catalog index (values, titles) and free text; writes nothing. Word tokens and lemmas
(`tokens`, `text`), everyday words (`lexicon`), catalog values in text (`concepts`), which films a
reply recommends or only mentions (`titles`), rule-based constraint tracking (`tracker`), and
title recognition measured against hand-labelled replies (`title_labels`).
"""
