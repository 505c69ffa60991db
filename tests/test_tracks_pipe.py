"""`--tracks -` and named pipes: the tracks as JSON lines to a consumer, flushed per frame,
with the logs and the summary on standard error (tiny fixture pose model, real CLI)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading

from media import gaussian_marker, write_video

FRAMES = 4


def _argv(clip, fixtures_dir, tracks):
    return [sys.executable, "-m", "realtime.cli", "run", str(clip), "--tasks", "pose", "--checkpoint",
            f"pose={fixtures_dir / 'pose_weights.safetensors'}", "--boxes-from", "frame", "--device", "cpu", "--no-video",
            "--no-progress", "--tracks", str(tracks)]


def test_tracks_to_standard_output_are_json_lines_and_the_summary_goes_to_stderr(tmp_path, fixtures_dir):
    clip = write_video(tmp_path / "clip.mp4", [gaussian_marker(96, 128, 30 + 8 * i, 48, 8) for i in range(FRAMES)], fps=10)
    done = subprocess.run(_argv(clip, fixtures_dir, "-"), capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    records = [json.loads(line) for line in done.stdout.splitlines()]
    assert records[0]["type"] == "header" and [r["frame"] for r in records[1:]] == list(range(FRAMES))
    assert "finished: end of source" in done.stderr and "tracks: -" in done.stderr
    assert not (tmp_path / "-").exists()  # no file named "-"


def test_tracks_into_a_named_pipe_reach_the_reader_line_by_line(tmp_path, fixtures_dir):
    clip = write_video(tmp_path / "clip.mp4", [gaussian_marker(96, 128, 30 + 8 * i, 48, 8) for i in range(FRAMES)], fps=10)
    fifo = tmp_path / "tracks.fifo"
    os.mkfifo(fifo)
    lines: list[str] = []

    def read():
        with open(fifo, encoding="utf-8") as pipe:
            lines.extend(pipe)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    done = subprocess.run(_argv(clip, fixtures_dir, fifo), capture_output=True, text=True, timeout=300)
    reader.join(30)
    assert done.returncode == 0, done.stderr
    records = [json.loads(line) for line in lines]
    assert records[0]["type"] == "header" and len(records) == 1 + FRAMES
    assert fifo.exists() and not fifo.is_file()  # still the pipe: never replaced or removed
