"""Reading a recommender's reply: what it did, by the project's own rules, for the user who reacts to it.

Reads a reply's text, the films it offers (catalog films and films outside the catalog, as the title
recognizer of crseval.language reads them or as a corpus marks them) and the session's earlier replies;
writes nothing. `form` (empty, stuttering, unfilled, garbled and repeated replies: the rules the conduct
metrics count too), `cases` (the one case of a reply: a catalog film, a film outside the catalog, not a film,
a question, an answer, a repeat, unusable, other; and per user turn of a session, the case of the reply it
reacts to), `complaints` (whether a user turn complains about a failure of the reply).
"""
