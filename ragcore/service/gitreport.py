"""What an ingest job's report adds for a git ref: the commit read, whether only changed files were
read, the chunks the model embedded, and the files not read with why."""

from __future__ import annotations

from typing import Any

from ragcore.types import IngestReport


def git_job_report(report: IngestReport) -> dict[str, Any]:
    src = report.source
    return {"source": {"mode": src.get("mode"), "ref": src.get("ref"), "commit": src.get("commit"),
                       "commit_time": src.get("commit_time")},
            "incremental": report.incremental, "chunks_embedded": report.chunks_embedded,
            "skipped_files": [{"path": o.path, "reason": o.reason} for o in report.skipped]}
