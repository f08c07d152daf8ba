"""Keep credentials out of everything coop-tui stores, prints, exports or shows.

Secrets reach coop-tui three ways: a literal ``api_key``, the value of an environment
variable (``api_key_env`` or the provider's usual one), and a ``user:password@`` part in
an ``api_base`` URL. The agent needs them to connect; nothing else does. Two tools:

- :func:`strip_userinfo` turns ``http://user:pass@host/v1?key=sk-1`` into
  ``http://host/v1?key=***``, for the public agent spec (stored, hashed, shown);
- :func:`scrub` removes every registered secret (and its Basic-auth encoding, each also
  URL-encoded: ``sk%2D…``, ``+`` or ``%20`` for a blank), any
  ``user:pass@`` in a URL or host, credentials in a URL's query (``?key=…``: HTTP
  libraries such as aiohttp quote the request URL in their errors), and ``Authorization``
  / ``Basic`` / ``Bearer`` echoes from free text such as provider error bodies, before it
  is stored or printed.

Secrets are registered when a sweep's keys are resolved (:func:`register_secret`), so a
provider that quotes the key back in an error cannot get it into the database.
:class:`LiveScrubber` does the same for text shown while it streams, where a secret may
arrive cut across two pieces.
"""

from __future__ import annotations

import base64
import re
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

MASK = "***"
_MIN_SECRET = 4  # shorter values would mask ordinary words
_SECRETS: set[str] = set()
_ENCODED: list[re.Pattern[str] | None] = [None]
"""Every secret's URL-encoded forms as one pattern, built when first needed after a
registration (a one-element list: rebuilt without a ``global`` statement)."""

# "scheme://user:pass@" or a bare "user:pass@host" (as in "model at user:pass@host:8000")
_USERINFO = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.\-]*://)?[^\s/@:'\"<>()\[\]{},]+:[^\s/@'\"<>]*@")
_USER_ONLY = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.\-]*://)[^\s/@:'\"<>]+@")
_QUERY_SECRET = re.compile(
    r"([?&;](?:api[_-]?key|key|apikey|token|access[_-]?token|auth|secret|password|passwd|"
    r"sig|signature)=)([^&\s'\"#<>)]+)",
    re.I,
)
"""A credential in a URL's query (``/v1?key=sk-...``, ``&token=...``): some providers take
the key that way, and HTTP libraries such as aiohttp quote the request URL in their errors."""
_AUTH_SCHEME = re.compile(r"\b(Bearer|Basic)(\s+|=|:\s*)([A-Za-z0-9._~+/=\-]+)", re.I)
_AUTH_HEADER = re.compile(
    r"((?:Proxy-)?Authorization|api[_-]?key|x-api-key)(['\"]?\s*[:=]\s*['\"]?)"
    r"(?:(Bearer|Basic)\s+)?([^\s'\",;}]+)",
    re.I,
)


def _looks_secret(token: str) -> bool:
    """A credential, not a word: long, with digits, mixed case or key punctuation."""
    if token == MASK or len(token) < 8:
        return False
    return (
        any(c.isdigit() for c in token)
        or (any(c.isupper() for c in token) and any(c.islower() for c in token))
        or any(c in "-_=+/." for c in token)
    )


def _mask_scheme(m: re.Match[str]) -> str:
    return f"{m.group(1)} {MASK}" if _looks_secret(m.group(3)) else m.group(0)


def _mask_header(m: re.Match[str]) -> str:
    scheme = f"{m.group(3)} " if m.group(3) else ""
    if m.group(4) == MASK or (not m.group(3) and not _looks_secret(m.group(4))):
        return m.group(0)
    return f"{m.group(1)}{m.group(2)}{scheme}{MASK}"


def register_secret(value: str | None) -> None:
    """Remember a credential so :func:`scrub` masks it (and its Basic-auth encodings)."""
    if not value or len(value) < _MIN_SECRET:
        return
    encoded = base64.b64encode(value.encode()).decode()
    _SECRETS.update({value, encoded, encoded.rstrip("=")})
    _ENCODED[0] = None


def _percent(byte: int) -> str:
    """A pattern for ``%XX`` of ``byte``, hex digits in either case."""
    return "%" + "".join(f"[{c}{c.lower()}]" if c.isalpha() else c for c in f"{byte:02X}")


def _encoded_form(secret: str) -> str:
    """A pattern matching ``secret`` with any of its characters percent-encoded (and a
    blank as ``+``): what a URL or a form body makes of it."""
    parts = []
    for ch in secret:
        forms = [re.escape(ch), "".join(_percent(b) for b in ch.encode())]
        if ch == " ":
            forms.append(r"\+")
        parts.append(f"(?:{'|'.join(forms)})")
    return "".join(parts)


def _encoded_secrets() -> re.Pattern[str] | None:
    """One pattern for the URL-encoded forms of every registered secret, longest first."""
    if _ENCODED[0] is None and _SECRETS:
        ordered = sorted(_SECRETS, key=len, reverse=True)
        _ENCODED[0] = re.compile("|".join(_encoded_form(s) for s in ordered))
    return _ENCODED[0]


_PERCENT_ESCAPE = re.compile(r"%[0-9A-Fa-f]{2}")
"""A URL escape: text without one (and without ``+``) holds no URL-encoded secret, and
skips the slower search below ("60%" in an answer is no escape)."""
_ENCODED_TOKEN = re.compile(r"(?<!\S)\S*?[%+]\S*")
"""A run of non-blank characters holding a ``%`` or ``+``: where a URL-encoded secret can
be. Anchored at the run's start, so the search stays linear in the text."""


def _mask_encoded(m: re.Match[str]) -> str:
    """The run with every URL-encoded secret in it masked. The secrets' pattern (slow:
    an alternative per character) runs only on a run that decodes to a secret."""
    run = m.group(0)
    decoded = unquote(run).replace(" ", "+")  # a blank may be written either way
    if not any(secret.replace(" ", "+") in decoded for secret in _SECRETS):
        return run
    pattern = _encoded_secrets()
    return pattern.sub(MASK, run) if pattern is not None else run


def longest_secret_form() -> int:
    """Characters of the longest form a registered secret can take in text (every byte
    percent-encoded: three characters each); 0 when none is registered."""
    return max((3 * len(s.encode()) for s in _SECRETS), default=0)


def register_url(url: str | None) -> None:
    """Register the ``user:password`` and the query credentials of a URL (as typed and
    as Basic auth sends them)."""
    if not url:
        return
    for m in _QUERY_SECRET.finditer(url):
        register_secret(m.group(2))
    if "@" not in url:
        return
    try:
        parts = urlsplit(url)
        user, password = parts.username, parts.password
    except ValueError:
        return
    if password:
        register_secret(password)
        register_secret(f"{user or ''}:{password}")
    elif user:
        register_secret(user)


def strip_userinfo(url: Any) -> Any:
    """``http://user:pass@host:8000/v1`` -> ``http://host:8000/v1``; lists element-wise.

    Anything that is not a URL with credentials comes back unchanged.
    """
    if isinstance(url, list | tuple):
        return type(url)(strip_userinfo(u) for u in url)
    if not isinstance(url, str):
        return url
    url = _QUERY_SECRET.sub(lambda m: m.group(1) + MASK, url)
    if "@" not in url:
        return url
    try:
        parts = urlsplit(url)
    except ValueError:
        return _USERINFO.sub(lambda m: m.group("scheme") or "", url)
    if "@" not in parts.netloc:
        return url
    host = parts.netloc.rsplit("@", 1)[1]
    return urlunsplit((parts.scheme, host, parts.path, parts.query, parts.fragment))


def has_userinfo(url: Any) -> bool:
    return strip_userinfo(url) != url


def scrub(text: Any) -> Any:
    """``text`` with every known secret and credential-looking fragment masked.

    Non-strings are returned unchanged, so callers can pass optional fields through.
    """
    if not isinstance(text, str) or not text:
        return text
    if "@" in text:
        text = _USERINFO.sub(lambda m: m.group("scheme") or "", text)
        text = _USER_ONLY.sub(lambda m: m.group("scheme"), text)
    if "=" in text:
        text = _QUERY_SECRET.sub(lambda m: m.group(1) + MASK, text)
    for secret in sorted(_SECRETS, key=len, reverse=True):
        if secret in text:
            text = text.replace(secret, MASK)
    if _SECRETS and (_PERCENT_ESCAPE.search(text) or (
        "+" in text and any(" " in secret for secret in _SECRETS)
    )):
        text = _ENCODED_TOKEN.sub(_mask_encoded, text)
    lowered = text.lower()
    if "bearer" in lowered or "basic" in lowered:
        text = _AUTH_SCHEME.sub(_mask_scheme, text)
    if any(w in lowered for w in ("authorization", "api_key", "api-key", "apikey")):
        text = _AUTH_HEADER.sub(_mask_header, text)
    return text


def scrub_data(value: Any) -> Any:
    """:func:`scrub` applied to every string inside nested dicts and lists."""
    if isinstance(value, str):
        return scrub(value)
    if isinstance(value, dict):
        return {k: scrub_data(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(scrub_data(v) for v in value)
    return value


class LiveScrubber:
    """Scrubs a text that arrives in pieces (a streamed answer shown live).

    A secret may arrive cut across two pieces, where scrubbing each piece finds neither
    half. So the last :func:`longest_secret_form` characters are held back until the next
    piece (or :meth:`flush`) shows whether they start a secret: whatever is handed on has
    been scrubbed together with everything that could complete it. With no secret
    registered nothing is held back.
    """

    __slots__ = ("_held",)

    def __init__(self) -> None:
        self._held = ""

    def feed(self, piece: str) -> str:
        """What of the text so far can be shown now, scrubbed."""
        text = scrub(self._held + piece)
        hold = longest_secret_form()
        if len(text) <= hold:
            self._held = text
            return ""
        self._held = text[len(text) - hold:] if hold else ""
        return text[: len(text) - hold]

    def flush(self) -> str:
        """The rest, at the end of the text (scrubbed like the rest)."""
        held, self._held = self._held, ""
        return held
