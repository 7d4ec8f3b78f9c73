"""What may name a collection: one rule for the store (schema.check_collection_name) and the
command line (cli/common.py), kept free of heavy imports so that a bad name fails at once.

A collection is a folder of the data folder (and of its snapshots), so a name must be a safe
file name, short enough for one: 255 bytes, less the snapshot's suffixes. (A 300-character name
used to end in a raw "OSError: [Errno 36] File name too long".)
"""

from __future__ import annotations

from typing import Callable

RESERVED_PREFIX = "ragcore__"  # ragcore's own collections (metadata, heading vectors)
MAX_COLLECTION_NAME = 100
ALLOWED = (f"a collection name is 1 to {MAX_COLLECTION_NAME} letters, digits, - and _ "
           f"(not a path, and not starting with {RESERVED_PREFIX})")


def collection_name_problem(name: str, label: str = "collection") -> str | None:
    """Why ``name`` cannot name a collection (None when it can), naming it as ``label=…``."""
    if len(name) > MAX_COLLECTION_NAME or len(name.encode("utf-8", "surrogatepass")) > 2 * MAX_COLLECTION_NAME:
        return f"{label}={name[:40]!r}… ({len(name)} characters) is not allowed: {ALLOWED}"
    if name.startswith(RESERVED_PREFIX) or not name.replace("-", "").replace("_", "").isalnum():
        return f"{label}={name!r} is not allowed: {ALLOWED}"
    return None


class CollectionRefused(ValueError):
    """A collection a request may not use, with the status a service answers: 422 (the name breaks
    the rule: it is never turned into a folder) or 404 (no such collection). The reason names the
    collection as it was sent, never a server path."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status, self.reason = status, reason


def checked_name(name: object, label: str = "collection") -> str:
    """``name`` when it may name a collection, else :class:`CollectionRefused` (422): the rule half
    of :func:`resolve_collection`, for a request checked before anything is read."""
    if not isinstance(name, str):
        raise CollectionRefused(422, f"{label}: a collection name is text; {ALLOWED}")
    problem = collection_name_problem(name, label)
    if problem:
        raise CollectionRefused(422, problem)
    return name


def resolve_collection(name: object, exists: Callable[[str], bool], label: str = "collection") -> str:
    """``name`` as the collection to read, through the one rule every route, job and tool applies:
    the name rule first (no path, no reserved name, nothing normalised: ``guide/.`` is refused, not
    read as ``guide``), then ``exists(name)`` (asked only of a name that passed the rule)."""
    checked_name(name, label)
    if not exists(name):
        raise CollectionRefused(404, f"There is no collection {name!r}; GET /api/collections lists them.")
    return name
