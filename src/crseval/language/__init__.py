"""Reading text: words, catalog values, film titles and constraints in what users and systems say.

Reads the catalog index (values, titles) and free text; writes nothing. Word tokens and lemmas
(`tokens`, `text`), everyday words (`lexicon`), catalog values in text (`concepts`), which films a
reply recommends or only mentions and which films outside the catalog it names (`titles`),
rule-based constraint tracking (`tracker`), and title and concept recognition measured against
hand-labelled replies (`title_labels`; real CRS Arena turns: audits/crsarena_labels.py).
"""
