"""``Engine.ingest(chunk_progress=…)``: the app's progress bar hears every written batch of chunks
(the work that takes the time), written never above queued, ending at what the report says."""

from __future__ import annotations

from ragcore.engine.engine import Engine
from ragcore.settings.config import RagcoreSettings


def test_chunk_progress_hears_every_batch_up_to_the_chunks_written(tmp_path):
    folder = tmp_path / "notes"
    folder.mkdir()
    for i in range(3):
        para = " ".join(f"station{i} reading {j} measured near the ridge." for j in range(400))
        (folder / f"note-{i}.md").write_text(f"# Note {i}\n\n{para}\n")
    calls: list[tuple[int, int]] = []
    engine = Engine(RagcoreSettings(data_dir=tmp_path / "data"))
    try:
        report = engine.ingest([folder], "notes", chunk_progress=lambda w, q: calls.append((w, q)), calibrate=False)
    finally:
        engine.close()
    assert report.chunks_written > 0 and calls
    assert all(w <= q for w, q in calls)
    assert [w for w, _ in calls] == sorted(w for w, _ in calls)  # it only moves forward
    assert calls[-1][0] == report.chunks_written
