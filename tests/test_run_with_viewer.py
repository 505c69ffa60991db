"""`sapiens-rt run --view` end to end with the real viewer, offscreen, in a child process
(so a Qt abort at exit would show as a failed exit status)."""

import os
import subprocess
import sys
from pathlib import Path

from media import gaussian_marker, read_video, write_video

ROOT = Path(__file__).resolve().parents[1]


def test_view_run_finishes_and_closes_at_the_end_of_the_file(tmp_path, fixtures_dir):
    src = write_video(tmp_path / "clip.mp4", [gaussian_marker(96, 128, 30 + 5 * i, 48, 8) for i in range(12)])
    out, tracks = tmp_path / "out.mp4", tmp_path / "t.jsonl"
    cmd = [sys.executable, "-m", "realtime.cli", "run", str(src), "--view", "--out", str(out), "--tracks", str(tracks),
           "--tasks", "pose,seg", "--input-size", "128x96", "--device", "cpu", "--no-progress", "--boxes-from", "frame",
           "--checkpoint", f"pose={fixtures_dir / 'pose_weights.safetensors'}",
           "--checkpoint", f"seg={fixtures_dir / 'seg_weights.safetensors'}"]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "QT_QPA_PLATFORM": "offscreen"}
    done = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr
    assert "finished: end of source" in done.stdout and "boxes from: frame 12 frames" in done.stdout
    video, _, _ = read_video(out)
    assert len(video) == 12 and len(tracks.read_text().splitlines()) == 13
