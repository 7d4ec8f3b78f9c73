"""Notebook persistence: one JSON file per collection, written atomically under an advisory lock.

Files: ``settings.notebooks_dir / "<collection>.json"``, written atomically (temporary file +
rename) under an advisory lock, so two browser tabs adding cells do not lose each other's.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import tempfile
import time
from pathlib import Path
from typing import Any, Iterator

from .model import FORMAT, Cell, Notebook, NotebookError


def _cell_json(cell: Cell) -> str:
    """One cell as compact JSON, kept on the cell while its runs are the same objects: a save after
    an answer serialises only the new cell. (A notebook of 50 answered cells is ~6 MB, mostly the
    candidate pools; dumping all of it per answer held the GIL for 0.1-1.4 s and so delayed the
    answer's last messages to the browser, which a server thread sends meanwhile.)"""
    key = (cell.id, cell.question, cell.context_mode, id(cell.selection), cell.created_at,
           tuple((id(r.answer), r.ran_at, r.outcome, id(r.passages)) for r in cell.runs))
    hit = cell.__dict__.get("_rc_json")
    if hit is not None and hit[0] == key:
        return hit[1]
    text = json.dumps(cell.to_dict(), ensure_ascii=False)  # no indent: json's C encoder (indent forces the Python one)
    # the objects whose ids are in the key are held with it: while held, no new object can take one
    # of those ids, so a replaced answer can never pass for the one that was written
    held = (cell.selection, [(r.answer, r.passages) for r in cell.runs])
    cell.__dict__["_rc_json"] = (key, text, held)
    return text


def notebook_json(notebook: Notebook) -> str:
    """The notebook file's text: ``Notebook.to_dict()`` as JSON, one line per cell."""
    head = json.dumps({"format": FORMAT, "collection": notebook.collection}, ensure_ascii=False)
    cells = ",\n".join(_cell_json(c) for c in notebook.cells)
    return f'{head[:-1]}, "cells": [\n{cells}\n]}}\n'


class NotebookStore:
    """One JSON file per collection under ``directory`` (``settings.notebooks_dir``)."""

    def __init__(self, directory: str | Path) -> None:
        self.directory = Path(directory)

    def path_for(self, collection: str) -> Path:
        safe = re.sub(r"[^A-Za-z0-9_.-]", "_", collection) or "_"
        return self.directory / f"{safe}.json"

    def signature(self, collection: str) -> tuple[int, int] | None:
        """(mtime_ns, size) of the file, to tell whether a cached copy is stale."""
        try:
            st = self.path_for(collection).stat()
        except FileNotFoundError:
            return None
        return (st.st_mtime_ns, st.st_size)

    def load(self, collection: str) -> Notebook:
        path = self.path_for(collection)
        try:
            raw = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return Notebook(collection)
        except OSError as exc:
            raise NotebookError(f"Could not read the notebook file {path} ({exc.strerror or exc}). Check its permissions.") from exc
        try:
            data = json.loads(raw)
            if not isinstance(data, dict):
                raise ValueError("not a JSON object")
            return Notebook.from_dict(data, collection)
        except (ValueError, TypeError, AttributeError) as exc:
            # keep the damaged file for inspection and start a fresh notebook
            backup = path.with_suffix(f".corrupt-{int(time.time())}.json")
            with contextlib.suppress(OSError):
                path.replace(backup)
            raise NotebookError(
                f"The notebook file {path} was damaged ({exc}); it was moved to {backup.name} and a new, "
                "empty notebook was started."
            ) from exc

    def save(self, notebook: Notebook) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        path = self.path_for(notebook.collection)
        data = notebook_json(notebook)
        try:
            fd, tmp = tempfile.mkstemp(prefix=path.name, suffix=".tmp", dir=self.directory)
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(data)
            os.replace(tmp, path)
        except OSError as exc:
            raise NotebookError(
                f"Could not save the notebook to {path} ({exc.strerror or exc}). Check that the data directory is writable."
            ) from exc

    @contextlib.contextmanager
    def _locked(self, collection: str) -> Iterator[None]:
        self.directory.mkdir(parents=True, exist_ok=True)
        lock_path = self.path_for(collection).with_suffix(".lock")
        with open(lock_path, "a+") as fh:
            try:
                import fcntl

                fcntl.flock(fh, fcntl.LOCK_EX)
            except (ImportError, OSError):  # no advisory locks here: last writer wins
                pass
            yield

    def _modify(self, collection: str, change, known: "tuple[Any, Notebook] | None" = None) -> Notebook:
        """Load (or take ``known``, a (signature, notebook) pair, when the file has not changed since),
        apply ``change``, save; under the file's lock, so sessions never lose each other's cells."""
        with self._locked(collection):
            if known is not None and known[0] is not None and known[0] == self.signature(collection):
                nb = Notebook(collection, list(known[1].cells))  # unchanged on disk: no need to parse it again
            else:
                try:
                    nb = self.load(collection)
                except NotebookError:
                    nb = Notebook(collection)
            change(nb)
            self.save(nb)
            return nb

    def upsert_cell(self, collection: str, cell: Cell, known: "tuple[Any, Notebook] | None" = None) -> Notebook:
        """Add or replace one cell, keeping cells other sessions added meanwhile (``known``: see ``_modify``)."""
        return self._modify(collection, lambda nb: nb.upsert(cell), known)

    def delete_cell(self, collection: str, cell_id: str) -> Notebook:
        return self._modify(collection, lambda nb: nb.remove(cell_id))

    def clear(self, collection: str) -> Notebook:
        return self._modify(collection, lambda nb: nb.cells.clear())
