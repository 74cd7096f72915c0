"""Names that become parts of file paths: experiments, systems, imported models.

One pattern for all of them, so that no name can climb out of the results folder ('..', '/',
an absolute path) or break a shell command or a Snakemake wildcard (spaces, braces), and none that a
CSV reader takes for a missing value ('NA', 'None', 'null', 'nan' and their spellings, which pandas
reads back from model_metrics.csv as NaN, so a system of that name would lose its rows). The config
schema uses the same pattern (a test keeps the two equal); imported log files, whose model names
nobody checked, are mapped to a safe slug and keep their original name in the data.
"""

from __future__ import annotations

import hashlib
import re

# the spellings of a missing value among pandas' defaults that the characters below allow
READ_AS_MISSING = ("NA", "NULL", "NaN", "None", "nan", "null")
NAME_PATTERN = r"^(?!(?:NA|NULL|NaN|None|nan|null)$)[A-Za-z0-9][A-Za-z0-9._:-]{0,99}$"
NAME_RULE = (
    "a letter or digit, then up to 99 letters, digits, '.', '_', ':' or '-' "
    "(no '/', spaces or other characters, so that the name is a safe folder name), "
    "and none of NA, NULL, NaN, None, nan, null (CSV readers take them for a missing value)"
)
_NAME = re.compile(NAME_PATTERN)
_UNSAFE = re.compile(r"[^A-Za-z0-9._:-]+")


def is_safe_name(name: object) -> bool:
    return isinstance(name, str) and _NAME.fullmatch(name) is not None


def safe_slug(name: str) -> str:
    """A name that follows the pattern, derived from `name`; unchanged if `name` already does.

    Unsafe runs of characters become '-', leading punctuation is dropped; a name with nothing
    usable left, or a long one, gets a short hash of the original so distinct names stay distinct.
    """
    if is_safe_name(name):
        return name
    slug = _UNSAFE.sub("-", name).lstrip("._:-")
    digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    if not slug or slug in READ_AS_MISSING:
        return f"model-{digest}"
    if len(slug) > 90:
        slug = f"{slug[:90].rstrip('._:-')}-{digest}"
    return slug
