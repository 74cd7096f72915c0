"""Genre words: the standard names that name a kind of film on their own, and their other spellings.

Shared by the value matcher (a genre named without a cue: "I'd like a comedy") and the title
recognizer (a genre name is not a film title), so it lives apart from both.
"""

from __future__ import annotations

# Genre names that name a kind of film on their own ("I'd like a comedy").
GENRE_NAMES = frozenset(
    """
action adventure animation animated biography comedy crime documentary drama fantasy horror musical mystery
romance thriller western science fiction sci-fi noir film noir satire parody slasher anime superhero
romantic comedy black comedy comedy-drama psychological thriller historical drama
""".split()
) | {"science fiction", "film noir", "romantic comedy", "black comedy", "psychological thriller"}

# Other spellings of standard genres -> the catalog value (used when the catalog has that value).
GENRE_FORMS = {
    "sci-fi": "science fiction",
    "sci fi": "science fiction",
    "scifi": "science fiction",
    "animated": "animation",
    "comedic": "comedy",
    "romantic": "romance",
    "rom-com": "romantic comedy",
    "romcom": "romantic comedy",
    "math": "mathematics",
    "maths": "mathematics",
    "biopic": "biography",
}
GENRE_ADJECTIVES = ("romantic", "comedic", "animated")  # forms that describe more than films: need a cue
