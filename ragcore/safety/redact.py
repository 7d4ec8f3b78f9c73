"""Secrets never leave the process: one place that strips credentials from what is shown,
logged, saved or exported (URLs with ``user:password@``, API keys and parts of them)."""

from __future__ import annotations

import re
from urllib.parse import urlsplit, urlunsplit

MASK = "***"
# a fragment of a key this long is specific enough to be worth hiding (a server may echo
# "sk-abc…xyz" or the last characters of the key it refused)
MIN_FRAGMENT = 6
_SK = re.compile(r"\bsk-[A-Za-z0-9_\-]{6,}")
_BEARER = re.compile(r"(?i)(bearer\s+)[^\s\"',;]+")
_URL_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://)[^/\s@]*@")


def redact_url(url: str | None) -> str | None:
    """The URL without ``user:password@``; None stays None."""
    if not url:
        return url
    try:
        p = urlsplit(url)
        host, port = p.hostname, p.port
    except ValueError:
        return _URL_USERINFO.sub(r"\1", url)
    if p.username is None and p.password is None:
        return url
    netloc = (host or "") + (f":{port}" if port else "")
    return urlunsplit((p.scheme, netloc, p.path, p.query, p.fragment))


def url_secrets(url: str | None) -> tuple[str, ...]:
    """The user name and password a URL carries, to redact wherever they show up."""
    if not url:
        return ()
    try:
        p = urlsplit(url)
    except ValueError:
        return ()
    return tuple(s for s in (p.password, p.username) if s)


def redact_text(text: str, secrets: tuple[str | None, ...] = ()) -> str:
    """``text`` with every secret (and any ≥ MIN_FRAGMENT-character part of one that a server
    echoed), ``sk-…`` keys, bearer tokens and URL credentials replaced by ***."""
    out = _URL_USERINFO.sub(r"\1", str(text))
    for secret in sorted((s for s in secrets if s), key=len, reverse=True):
        out = out.replace(secret, MASK) if len(secret) >= 4 else out
        out = _mask_fragments(out, secret)
    out = _SK.sub("sk-" + MASK, out)
    return _BEARER.sub(r"\1" + MASK, out)


def _mask_fragments(text: str, secret: str) -> str:
    """Hide any run of ≥ MIN_FRAGMENT characters of ``secret`` (prefixes, suffixes, middles)."""
    if len(secret) < MIN_FRAGMENT:
        return text
    for size in range(len(secret) - 1, MIN_FRAGMENT - 1, -1):
        for i in range(0, len(secret) - size + 1):
            part = secret[i : i + size]
            if part in text:
                text = text.replace(part, MASK)
    return text
