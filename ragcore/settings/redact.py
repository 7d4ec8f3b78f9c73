"""Secrets never leave the process: one place that strips credentials from what is shown,
logged, saved or exported (URLs with ``user:password@``, API keys and parts of them)."""

from __future__ import annotations

import base64
import binascii
import re
from urllib.parse import urlsplit, urlunsplit

MASK = "***"
# a fragment of a key this long is specific enough to be worth hiding (a server may echo
# "sk-abc…xyz" or the last characters of the key it refused)
MIN_FRAGMENT = 6
_SK = re.compile(r"\bsk-[A-Za-z0-9_\-]{6,}")
_BEARER = re.compile(r"(?i)(bearer\s+)[^\s\"',;]+")
# an echoed ``Authorization:`` header (or a JSON/dict key of that name), whatever its scheme:
# Basic, Bearer, Digest, Token, AWS4-HMAC-SHA256 ...: the scheme's value is hidden, either
# key=value pairs (Digest, AWS; quotes JSON-escaped as \") or one token, and the text after it kept
_PAIR = r"[\w.~+/-]+=(?:\\?\"[^\"\\]*\\?\"|[^\s,\"'\\)}]+)"
_AUTH_HEADER = re.compile(
    r"(?i)(\b(?:proxy-)?authorization[\"']?\s*[:=]\s*[\"']?)"
    rf"(?:[A-Za-z][\w.+-]*\s+)?(?:{_PAIR}(?:\s*,\s*{_PAIR})*|[^\s\"',;)}}\\]+)"
)
# a scheme with its credential anywhere else ("... got Basic dXNlcjpzZWNyZXQ= ..."): the schemes
# are named exactly and the credential must look like one, so that prose ("Token based") is kept
_SCHEME_CREDENTIAL = re.compile(
    r"\b((?:Basic|Digest|Token|ApiKey|Api-Key|Negotiate|NTLM|AWS4-HMAC-SHA256|HOBA|Mutual|SCRAM-SHA-256)\s+)"
    r"([A-Za-z0-9+/=._~\-]{8,})"
)
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
    echoed), ``sk-…`` keys, bearer tokens, the value of any echoed ``Authorization`` header
    (every scheme), Basic/Digest/Token/… credentials and URL credentials replaced by ***."""
    out = _URL_USERINFO.sub(r"\1", str(text))
    for secret in sorted((s for s in secrets if s), key=len, reverse=True):
        out = out.replace(secret, MASK) if len(secret) >= 4 else out
        out = _mask_fragments(out, secret)
    out = _SK.sub("sk-" + MASK, out)
    out = _AUTH_HEADER.sub(r"\1" + MASK, out)
    out = _SCHEME_CREDENTIAL.sub(_mask_credential, out)
    return _BEARER.sub(r"\1" + MASK, out)


def _mask_credential(m: re.Match[str]) -> str:
    """``Basic <base64 of user:password>`` or a token-like value (digits or base64 padding)."""
    value = m.group(2)
    if m.group(1).strip().lower() == "basic":
        try:
            secret = b":" in base64.b64decode(value + "=" * (-len(value) % 4), validate=True)
        except (binascii.Error, ValueError):
            secret = False
    else:
        secret = any(c.isdigit() or c in "+/=" for c in value)
    return m.group(1) + MASK if secret else m.group(0)


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


# --------------------------------------------------------------------------- secret-looking lines

# a name that ends in key, token, secret, password ... (SECRET_KEY, OPENAI_API_KEY, DB_PASSWORD, api_key;
# not AUTH_USER_MODEL or PASSWORD_HASHERS), set to one literal word (not a call: password = CharField(…))
_SECRET_NAME = r"[A-Za-z0-9_.\-]*(?:key|token|secret|password|passwd|pwd|pass|credentials?)"
_SECRET_LINE = [
    re.compile(rf"(?i)^\s*(?:export\s+)?[\"']?{_SECRET_NAME}[\"']?\s*[:=]\s*[\"']?[^\s\"'()\[\]{{}},]{{6,}}[\"']?\s*[,;]?\s*$"),
    re.compile(r"\bsk-[A-Za-z0-9_\-]{16,}|\bgh[pousr]_[A-Za-z0-9]{30,}|\bxox[baprs]-[A-Za-z0-9\-]{10,}"
               r"|\bAKIA[0-9A-Z]{16}\b|\bAIza[0-9A-Za-z_\-]{30,}|\bglpat-[A-Za-z0-9_\-]{20,}"),
    re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----"),
    re.compile(r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}"),  # a JWT
    re.compile(r"^[^:\s]+:[!*]?\$[0-9a-z]{1,3}\$[^:\s]+:"),  # a crypt(3) hash, as in /etc/shadow
    re.compile(r"^[^:\s]+:[^:\s]*:\d*:\d*:\d*:\d*:\d*:\d*:"),  # any /etc/shadow entry (password fields)
    re.compile(r"(?i)\bauthorization\s*:\s*\S+\s+\S{8,}"),
]


def looks_like_secret(line: str) -> bool:
    """Whether a line of a file looks like it holds a credential: an API key or token of a
    known shape, ``PASSWORD=…``/``api_key: …``, a private key, a JWT, a password hash. A
    pattern check, for keeping such lines out of what is shown (not a secret scanner)."""
    return any(rx.search(line) for rx in _SECRET_LINE)
