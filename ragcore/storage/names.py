"""What may name a collection: one rule for the store (schema.check_collection_name) and the
command line (cli/common.py), kept free of heavy imports so that a bad name fails at once.

A collection is a folder of the data folder (and of its snapshots), so a name must be a safe
file name, short enough for one: 255 bytes, less the snapshot's suffixes. (A 300-character name
used to end in a raw "OSError: [Errno 36] File name too long".)
"""

from __future__ import annotations

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
