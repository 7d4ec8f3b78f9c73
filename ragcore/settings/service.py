"""Settings of `ragcore serve`: the listening address, API keys, limits, CORS.

Read from ``RAGCORE_API_KEYS`` and ``RAGCORE_SERVE_*`` variables and checked by the same rules as
every other setting (:mod:`ragcore.settings.config`): a bad value raises :class:`ConfigError`
naming the variable, the value (never a key's) and what is allowed. The variable names are also
derived from these fields (``config.SERVICE_VARIABLES``) so that the unknown-variable check lets them through.
"""

from __future__ import annotations

import ipaddress
import re
from urllib.parse import urlsplit
from dataclasses import dataclass, fields
from typing import Any, Mapping

from ragcore.settings.rules import ConfigError, _check_fields, _rules, _safe_repr, _setting, check_value, env_values

SERVE_ENV_PREFIX = "RAGCORE_SERVE_"
API_KEYS_VARIABLE = "RAGCORE_API_KEYS"
LOOPBACK_NAMES = ("localhost",)


@dataclass(frozen=True, repr=False)
class ServiceSettings:
    # loopback unless told otherwise
    host: str = _setting(
        "127.0.0.1", "str",
        help="Address to listen on.")
    port: int = _setting(
        8000, "int", ge=1, le=65535,
        help="Port to listen on.")
    workers: int = _setting(
        1, "int", ge=1, le=64,
        help="Worker processes, each with its own engine and limits.")
    # Bearer keys; with none set, only a loopback address may be served (see problem())
    api_keys: tuple[str, ...] = _setting(
        (), "strs", secret=True,
        help="Keys a request must send as `Authorization: Bearer <key>` (every route but `/healthz`); required to serve on "
             "an address other than loopback. Never shown or logged.")
    # a JSON request (question, selection, history)
    max_body_bytes: int = _setting(
        1_000_000, "int", ge=1024,
        help="Largest request body (larger: `413`) and WebSocket message (larger: the server closes the socket).")
    # one ingest request's files together
    max_upload_bytes: int = _setting(
        50_000_000, "int", ge=1024,
        help="Largest upload request (all its files); larger: `413`.")
    # one question, queueing included
    deadline_s: float = _setting(
        60.0, "float", gt=0.0,
        help="Longest time one question may take, waiting for a slot included.")
    # questions answered at once (2 cores: more only queue)
    max_concurrent: int = _setting(
        4, "int", ge=1,
        help="Questions (and retrievals) answered at once per worker.")
    # questions waiting for a slot; beyond: 429
    max_queued: int = _setting(
        16, "int", ge=0,
        help="Questions waiting for a slot; one more gets `429`.")
    # the Retry-After of a 429
    retry_after_s: int = _setting(
        1, "int", ge=1,
        help="The `Retry-After` of a `429`, in seconds.")
    # none: no CORS headers at all
    cors_origins: tuple[str, ...] = _setting(
        (), "strs", shown_default="not set (CORS off)",
        help="Browser origins allowed to call the API.")
    # finished ingest jobs remembered for GET /api/jobs/{id}
    max_jobs: int = _setting(
        50, "int", ge=1,
        help="Finished ingest jobs remembered for `GET /api/jobs/{id}`.")
    # host names a request's Host header may carry besides the bound address (and, on loopback,
    # localhost): the names a proxy or a DNS entry gives the server; "*": any (service/guard.py)
    allowed_hosts: tuple[str, ...] = _setting(
        (), "strs", shown_default="not set (the bound address; localhost on loopback)",
        help="Host names a request's `Host` header may carry besides the bound address (a proxy's or a DNS "
             "name for the server); `*` turns the check off.")

    def __post_init__(self) -> None:
        _check_fields(self)
        for origin in self.cors_origins:
            if origin != "*" and not is_origin(origin):
                raise ConfigError(f"RAGCORE_SERVE_CORS_ORIGINS={origin[:80]!r} is not an origin: each is "
                                  "scheme://host[:port] (e.g. https://notebook.example.org), no path; or *")
        for name in self.allowed_hosts:
            if name != "*" and not _HOST_NAME.fullmatch(name):
                raise ConfigError(f"RAGCORE_SERVE_ALLOWED_HOSTS={name[:80]!r} is not a host name: each is a name or "
                                  "address without scheme, port or path (e.g. rag.example.org); or *")

    def __repr__(self) -> str:
        return _safe_repr(self)

    @property
    def loopback(self) -> bool:
        return is_loopback(self.host)

    def problem(self) -> str | None:
        """Why these settings may not be served (None: they may): a key is required off loopback."""
        if not self.loopback and not self.api_keys:
            return (f"--host {self.host} is not a loopback address: set {API_KEYS_VARIABLE} (keys separated by ;) "
                    "so that every request needs a key, or serve on 127.0.0.1")
        return None

    def public_dict(self) -> dict[str, Any]:
        d = {f.name: getattr(self, f.name) for f in fields(self)}
        d["api_keys"] = len(self.api_keys)  # how many, never which
        return {k: list(v) if isinstance(v, tuple) else v for k, v in d.items()}

    @classmethod
    def from_env(cls, env: Mapping[str, str], **overrides: Any) -> "ServiceSettings":
        """From ``RAGCORE_SERVE_*`` and ``RAGCORE_API_KEYS``; ``overrides`` (command-line options,
        ``None`` = not given) win and are checked by the same rules."""
        values, _ = env_values(cls, env, SERVE_ENV_PREFIX, skip=("api_keys",))
        raw = env.get(API_KEYS_VARIABLE, "")
        if raw.strip():
            values["api_keys"] = check_value("api_keys", _rules(cls)["api_keys"], raw, API_KEYS_VARIABLE)
        rules = _rules(cls)
        problems = []
        for name, value in overrides.items():
            if value is None:
                continue
            if name not in rules:
                raise ConfigError(f"unknown setting {name} for {cls.__name__}")
            try:
                values[name] = check_value(name, rules[name], value, f"--{name.replace('_', '-')}")
            except ConfigError as exc:
                problems.append(str(exc))
        if problems:
            raise ConfigError("; ".join(problems))
        return cls(**values)


def service_variables() -> frozenset[str]:
    """Every variable ServiceSettings reads."""
    return frozenset({API_KEYS_VARIABLE} | {SERVE_ENV_PREFIX + n.upper() for n in _rules(ServiceSettings) if n != "api_keys"})


_HOST_NAME = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9.-]{0,251}[A-Za-z0-9])?|\[[0-9A-Fa-f:.]+\]|[0-9A-Fa-f:.]+")


def is_origin(text: str) -> bool:
    """Whether ``text`` is a web origin as a browser sends it: http(s)://host[:port], nothing more."""
    try:
        parts = urlsplit(text)
        port = parts.port  # raises on a port that is not a number
    except ValueError:
        return False
    return (parts.scheme in ("http", "https") and bool(parts.hostname) and not parts.path and not parts.query
            and not parts.fragment and "@" not in parts.netloc and (port is None or 0 < port < 65536)
            and bool(_HOST_NAME.fullmatch(parts.hostname)))


def is_loopback(host: str) -> bool:
    if host.lower() in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a host name other than localhost may resolve anywhere
