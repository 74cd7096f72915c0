"""The user audit counts how each profile's turns were worded and re-reads every turn against its ground truth."""

from crseval.checks.user_audit import audit_markdown, audit_table, misread, pools_table
from crseval.language.concepts import ConceptMatcher


def turn(number, text, stated, titles=(), voice=None, recommended=()):
    meta = {"stated": [dict(zip(("field", "value", "role"), s)) for s in stated], "titles": list(titles)}
    if voice is not None:
        meta["voice"] = voice
    return {"turn": number, "user_text": text, "user_meta": meta, "recommended_titles": list(recommended)}


LEARNED = {"voice": "learned", "templates": ["later|request|genre:wish#0"], "redraws": 2, "fallback": ""}
RULES = {"voice": "rules", "templates": [], "redraws": 3, "fallback": "no template of the act"}


def test_a_turn_that_says_what_it_means_reads_back(small_index):
    matcher = ConceptMatcher(small_index.concepts, small_index.films)
    assert misread(matcher, "any Thriller films?", turn(1, "", [("genre", "thriller", "wish")])["user_meta"], []) == ""
    problem = misread(matcher, "any Thriller films?", turn(1, "", [])["user_meta"], [])
    assert problem.startswith("values read [('genre', 'thriller', 'wish')] but meant []")


def test_the_audit_counts_voices_fallbacks_redraws_and_failures(small_index):
    matcher = ConceptMatcher(small_index.concepts, small_index.films)
    learned = {
        "session_id": "a/s00000",
        "system": "a",
        "profile": "learned",
        "turns": [
            turn(1, "any Thriller films?", [("genre", "thriller", "wish")], voice=LEARNED),
            turn(2, "what else?", [], voice=RULES),
            # its record says a wish it does not say: a read-back failure
            turn(3, "hmm ok", [("genre", "thriller", "wish")], voice=LEARNED),
        ],
    }
    explicit = {"session_id": "b/s00000", "system": "b", "turns": [turn(1, "I'd like a Thriller movie.", [])]}
    table = audit_table([learned, explicit], matcher, {"b": "explicit"}).set_index("profile")
    assert table.loc["learned", "turns"] == 3 and table.loc["learned", "sessions"] == 1
    assert table.loc["learned", "worded by the learned voice"] == 2
    assert table.loc["learned", "worded by the rules voice"] == 1
    assert table.loc["learned", "rules because: no template of the act"] == 1
    assert table.loc["learned", "redraws"] == 7
    assert table.loc["learned", "read-back failures"] == 1
    assert table.loc["learned", "first failure"].startswith("a/s00000 turn 3: values read []")
    assert table.loc["explicit", "read-back failures"] == 1  # "Thriller" is read, the record says nothing
    text = audit_markdown(table.reset_index(), pools_table({"later|request|genre:wish": [1, 2], "leave||": [1]}))
    assert "| leaving | leave | 1 |" in text and "| request | later | 2 |" in text
