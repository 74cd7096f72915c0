"""The one check every link of a page passes: a URL may keep no scheme but http(s).

The pages (findings, viewer, compare, board) write links to files beside them, whose names come from configs,
folder names and hand-edited records. A link whose URL starts with another scheme (javascript:, data:,
vbscript:) would run what follows when clicked, so such a URL is written as a relative path instead: the link
opens a file of that name (or nothing) and never runs a script. The scheme is read as a browser reads it:
leading spaces and control characters dropped, tabs and line breaks inside ignored ("java\\tscript:" is
"javascript:"). The caller still escapes the URL for its attribute.
"""

from __future__ import annotations

import re

WEB_SCHEMES = frozenset({"https", "http"})  # the schemes a link of a page may keep
_SCHEME = re.compile(r"^([a-z][a-z0-9+.-]*):", re.IGNORECASE)
_IGNORED_IN_URL = re.compile("[\t\n\r]")
_LEADING = "".join(chr(c) for c in range(0x21))  # C0 controls and the space, which a browser strips


def scheme(url: str) -> str | None:
    """The scheme a browser reads at the start of `url`, in lower case; None for a relative URL."""
    found = _SCHEME.match(_IGNORED_IN_URL.sub("", url).lstrip(_LEADING))
    return found[1].lower() if found else None


def safe_url(value) -> str:
    """`value` as a URL a page may link to: relative paths and http(s) URLs as given, a URL with any other
    scheme as the relative path "./<value>"."""
    url = str(value)
    found = scheme(url)
    return url if found is None or found in WEB_SCHEMES else "./" + url
