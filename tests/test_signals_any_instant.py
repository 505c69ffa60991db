"""Ctrl+C at any instant of `sapiens-rt run`, through the CLI: at many offsets from the start
(imports, model loading, warm-up, running) and twice (a second Ctrl+C during the graceful
stop). Every time: exit 130 (or 0 when the run had already finished), no traceback, and what
was written is whole (every tracks line parses, the video decodes with one frame per line).

The offsets are where the signal is sent, not limits: nothing here asserts a duration."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from media import gaussian_marker, write_video

ROOT = Path(__file__).resolve().parents[1]
# seconds after the command starts (its first log line; before it, Python itself is starting up:
# site-packages, .pth files, which no program can guard)
OFFSETS = (0.0, 0.05, 0.1, 0.2, 0.3, 0.33, 0.35, 0.5, 0.8, 1.2, 1.8, 2.6, 3.5)
PHASES = ("sapiens-rt run: starting", "realtime.run: loading models", "realtime.run: warming up", "realtime.run: running")


@pytest.fixture(scope="module")
def video(tmp_path_factory) -> Path:
    frames = [gaussian_marker(96, 128, 20 + (i % 90), 50, 6) for i in range(200)]
    return write_video(tmp_path_factory.mktemp("signals") / "walk.mp4", frames, fps=10)


def _start(video: Path, out: Path, fixtures_dir: Path) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "realtime.cli", "-v", "run", str(video), "--out", str(out / "o.mp4"), "--tracks",
           str(out / "t.jsonl"),
           "--tasks", "pose", "--input-size", "64x48", "--device", "cpu", "--no-progress", "--boxes-from", "frame",
           "--checkpoint", f"pose={fixtures_dir / 'pose_weights.safetensors'}"]
    return subprocess.Popen(cmd, env={**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _check_whole(out: Path) -> int:
    """Every output is whole: tracks lines all parse; the video decodes, one frame per tracks frame."""
    tracks, video = out / "t.jsonl", out / "o.mp4"
    lines = [json.loads(line) for line in tracks.read_text().splitlines()] if tracks.exists() else []
    frames = sum(1 for record in lines if record.get("type") == "frame")
    if video.exists():
        import av

        with av.open(str(video)) as container:
            assert sum(1 for _ in container.decode(video=0)) == frames
    return frames


def _check_exit(proc: subprocess.Popen, stdout: str, stderr: str) -> None:
    assert "Traceback" not in stderr and "Exception ignored" not in stderr, stderr[-3000:]
    if proc.returncode == 0:  # the run had finished before the signal came
        assert "finished: end of source" in stdout, stdout
    else:
        assert proc.returncode == 130, (proc.returncode, stderr[-3000:])
        assert "interrupted" in stderr.strip().splitlines()[-1] or "stopped: interrupted" in stdout, (stdout, stderr[-2000:])


@pytest.mark.slow
def test_ctrl_c_at_any_offset_exits_130_without_a_traceback(video, tmp_path, fixtures_dir):
    codes = []
    for k, offset in enumerate(OFFSETS):
        out = tmp_path / str(k)
        proc = _start(video, out, fixtures_dir)
        first = proc.stderr.readline()  # "sapiens-rt run: starting": our code runs, and so guards
        time.sleep(offset)
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=300)
        stderr = first + stderr
        _check_exit(proc, stdout, stderr)
        _check_whole(out)
        codes.append(proc.returncode)
    assert codes.count(130) >= len(OFFSETS) // 2, codes  # most signals came while it ran


@pytest.mark.slow
@pytest.mark.parametrize("phase", PHASES)
def test_ctrl_c_in_each_phase_exits_130_and_leaves_whole_files(video, tmp_path, fixtures_dir, phase):
    proc = _start(video, tmp_path, fixtures_dir)
    seen = []
    for line in proc.stderr:  # the -v log says which phase the run is in
        seen.append(line)
        if phase in line:
            proc.send_signal(signal.SIGINT)
            break
    stdout, rest = proc.communicate(timeout=300)
    stderr = "".join(seen) + rest
    assert proc.returncode == 130, stderr[-3000:]
    _check_exit(proc, stdout, stderr)
    _check_whole(tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("gap", [0.0, 0.01, 0.05, 0.2])
def test_a_second_ctrl_c_while_stopping_ends_at_once_with_whole_files(video, tmp_path, fixtures_dir, gap):
    proc = _start(video, tmp_path, fixtures_dir)
    seen = []
    for line in proc.stderr:
        seen.append(line)
        if "realtime.run: running" in line:
            break
    for _ in range(3):  # frames go through the models and out before the first Ctrl+C
        if (tmp_path / "t.jsonl").exists() and len((tmp_path / "t.jsonl").read_text().splitlines()) > 3:
            break
        time.sleep(0.5)
    proc.send_signal(signal.SIGINT)
    time.sleep(gap)
    proc.send_signal(signal.SIGINT)
    stdout, rest = proc.communicate(timeout=300)
    stderr = "".join(seen) + rest
    assert proc.returncode == 130, stderr[-3000:]
    _check_exit(proc, stdout, stderr)
    assert _check_whole(tmp_path) >= 1
