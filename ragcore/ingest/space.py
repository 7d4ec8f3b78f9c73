"""Free space for an ingest: checked before anything is written, and again before each batch.

Qdrant Edge preallocates its segment and write-ahead-log files at 32 MB and maps them into
memory. The files are sparse, so they cost nothing until written; but when a page of a mapped
file is first written on a full disk, the kernel kills the process with SIGBUS (exit 135, no
message). Python cannot turn that signal into an exception (the faulting store would repeat),
so the only cure is not to start a write that can run out of room. Measured on tmpfs
(docs/15-troubleshooting-and-faq.md, "The disk is full"): a one-file collection needs about
3.5 MB once written, but an ingest that calibrates fills one whole 32 MB file at once (the
bundled guide, 180 KB of Markdown: peak 39.9 MB); each chunk then adds about 13 KB (log,
payload, vectors, snapshot).

So: ``RESERVE_BYTES`` must always stay free, plus an estimate for what is about to be written
(``BYTES_PER_TEXT_BYTE`` per byte of new text files, less for PDFs, whose bytes are mostly not
text). An ENOSPC that still happens (a disk filled by another program meanwhile) is reported
the same way by :func:`as_space_error`.
"""

from __future__ import annotations

import errno
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Iterable, Sequence

from ragcore.storage.store import StoreError

if TYPE_CHECKING:
    from ragcore.ingest.discover import SourceFile
    from ragcore.settings.config import RagcoreSettings

MB = 1 << 20
SEGMENT_FILE_BYTES = 32 * MB  # Qdrant Edge's preallocated, memory-mapped segment and log files
RESERVE_BYTES = 36 * MB  # one segment file filled at once, plus the collection's small files
PER_CHUNK_BYTES = 16 * 1024  # measured ~13 KB a chunk (write-ahead log, payload, vectors, snapshot)
BYTES_PER_TEXT_BYTE = 32  # the guide: 180 KB of Markdown → 232 chunks → ~4 MB beyond the reserve, with room
BYTES_PER_BINARY_BYTE = 2  # a PDF's bytes are mostly fonts, images and compression, not text
PER_FILE_BYTES = 16 * 1024
_BINARY_SUFFIXES = frozenset({".pdf"})


class NoSpaceError(StoreError):
    """Not enough free space for the ingest; the message names the folder, the need and what is left."""


@dataclass(frozen=True)
class SpaceCheck:
    folder: Path
    need: int
    free: int

    @property
    def enough(self) -> bool:
        return self.free >= self.need

    def message(self, what: str) -> str:
        return (
            f"Not enough free space in {self.folder} for {what}: it needs about {_mb(self.need)} and "
            f"{_mb(self.free)} {'is' if self.free < 2 * MB else 'are'} left (Qdrant Edge maps {SEGMENT_FILE_BYTES // MB} MB "
            "files and fills them as it writes; a full disk would stop it without a word). Free some space on "
            "that disk, or set RAGCORE_DATA_DIR to a folder on a disk with more room, and run the ingest "
            "again: what is stored is unchanged."
        )


def _mb(n: int) -> str:
    return f"{n / MB:.1f} MB"


def free_bytes(folder: Path) -> int:
    """Bytes an unprivileged writer may still use on the disk holding ``folder`` (or its
    nearest existing parent, for a data folder not created yet)."""
    probe = Path(folder)
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    st = os.statvfs(probe)
    return st.f_bavail * st.f_frsize


def estimate_need(sizes: Iterable[tuple[str, int]]) -> int:
    """What writing files of these (name, bytes) needs, the reserve included."""
    need = RESERVE_BYTES
    for name, size in sizes:
        per_byte = BYTES_PER_BINARY_BYTE if Path(name).suffix.lower() in _BINARY_SUFFIXES else BYTES_PER_TEXT_BYTE
        need += PER_FILE_BYTES + per_byte * max(size, 0)
    return need


def data_folder(settings: "RagcoreSettings") -> Path | None:
    """Where the embedded store writes (None for a Qdrant server: its disk is not ours to check)."""
    return None if settings.qdrant_url else Path(settings.data_dir)


def check_before_ingest(folder: Path | None, sources: Sequence["SourceFile"], stored: Iterable[str]) -> None:
    """Before anything is written: room for the files not stored yet (all of them the first time).
    Changed files are guarded batch by batch (:func:`check_batch`)."""
    if folder is None:
        return
    known = set(stored)
    sizes = [(s.rel, _size(s)) for s in sources if s.problem is None and s.rel not in known]
    check_space(folder, estimate_need(sizes), f"ingesting {len(sizes)} new file{'s' if len(sizes) != 1 else ''}")


def _size(src: "SourceFile") -> int:
    if src.data is not None:
        return len(src.data)
    try:
        return src.path.stat().st_size if src.path is not None else 0
    except OSError:
        return 0  # gone or unreadable: the ingest reports it


def check_space(folder: Path, need: int, what: str) -> SpaceCheck:
    """Raise NoSpaceError unless ``need`` bytes are free where ``folder`` lives."""
    check = SpaceCheck(Path(folder), need, free_bytes(folder))
    if not check.enough:
        raise NoSpaceError(check.message(what))
    return check


def check_batch(folder: Path | None, chunks: int) -> None:
    """Before one write batch: room for it and for the reserve (other writers may have filled the disk)."""
    if folder is not None:
        check_space(folder, RESERVE_BYTES + chunks * PER_CHUNK_BYTES, f"the next {chunks} chunks")


def as_space_error(exc: BaseException, folder: Path) -> NoSpaceError | None:
    """The NoSpaceError for a write that failed for lack of room (ENOSPC/EDQUOT, or Qdrant's
    own error saying so), else None."""
    if isinstance(exc, NoSpaceError):
        return exc
    full = isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT)
    full = full or "no space left on device" in str(exc).lower() or "disk quota exceeded" in str(exc).lower()
    if not full:
        return None
    return NoSpaceError(SpaceCheck(Path(folder), RESERVE_BYTES, free_bytes(folder)).message("this ingest"))
