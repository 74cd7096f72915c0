"""Passwords and keys out of URLs before they reach a message, a log line or a shared file.

Server addresses (ollama `host`, openai `base_url`) may carry credentials; error messages, job logs
and provenance records are read by others, so the password of the user part and secret-looking
query values become `***` (the user name stays).
"""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

_SECRET_QUERY = re.compile(r"key|token|secret|passw|auth|sig", re.I)
# a bounded scheme keeps the search linear on long runs of letters; the last character is not punctuation
_URL_IN_TEXT = re.compile(r"[A-Za-z][A-Za-z0-9+.-]{0,30}://[^\s'\"<>]*[^\s'\"<>:;,.)\]]")


def redact_url(url: str) -> str:
    """`url` with `***` for the password of its user part and for secret-looking query values."""
    if not isinstance(url, str) or not url or any(c.isspace() for c in url):
        return url
    schemeless = "://" not in url
    if schemeless and "@" not in url:
        return url
    try:
        parts = urlsplit("//" + url if schemeless else url)
        password = parts.password
    except ValueError:
        return url
    netloc = parts.netloc
    if password is not None:
        netloc = f"{parts.username or ''}:***@{netloc.rpartition('@')[2]}"
    query = parts.query
    if query and any(_SECRET_QUERY.search(k) for k, _ in parse_qsl(query, keep_blank_values=True)):
        pairs = parse_qsl(query, keep_blank_values=True)
        query = urlencode([(k, "***" if _SECRET_QUERY.search(k) else v) for k, v in pairs], safe="*")
    if netloc == parts.netloc and query == parts.query:
        return url
    redacted = urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))
    return redacted[2:] if schemeless else redacted


def redact_urls(text: str) -> str:
    """`text` with `redact_url` applied to every URL in it: for messages written by libraries."""
    return _URL_IN_TEXT.sub(lambda match: redact_url(match.group(0)), text)
