"""Ctrl+C / SIGTERM while sapiens-rt starts (imports, model loading, warm-up): a clean exit
130 / 143 with one line, no traceback, and nothing half-made (no output folder, no file)."""

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from media import gaussian_marker, write_video

ROOT = Path(__file__).resolve().parents[1]
PHASES = {"imports": "sapiens-rt run: starting", "model loading": "realtime.run: loading models",
          "warm-up": "realtime.run: warming up"}


@pytest.mark.slow
@pytest.mark.parametrize("sig,code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)], ids=["SIGINT", "SIGTERM"])
@pytest.mark.parametrize("phase", list(PHASES))
def test_a_signal_during_start_up_exits_cleanly_leaving_nothing(tmp_path, fixtures_dir, phase, sig, code):
    src = write_video(tmp_path / "v.mp4", [gaussian_marker(96, 128, 40, 50, 6)] * 5)
    rec = tmp_path / "rec"
    cmd = [sys.executable, "-m", "realtime.cli", "-v", "run", str(src), "--output-dir", str(rec),
           "--tracks", str(rec / "sub" / "t.jsonl"), "--tasks", "pose,seg", "--input-size", "1024x768", "--device", "cpu",
           "--no-progress", "--boxes-from", "frame", "--checkpoint", f"pose={fixtures_dir / 'pose_weights.safetensors'}",
           "--checkpoint", f"seg={fixtures_dir / 'seg_weights.safetensors'}"]
    proc = subprocess.Popen(cmd, env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    seen = []
    for line in proc.stderr:  # the -v log says which phase the run is in
        seen.append(line)
        if PHASES[phase] in line:
            proc.send_signal(sig)
            break
    stdout, rest = proc.communicate(timeout=120)
    stderr = "".join(seen) + rest
    assert PHASES[phase] in stderr
    assert proc.returncode == code, stderr[-3000:]
    assert "Traceback" not in stderr
    assert stderr.strip().splitlines()[-1] == ("interrupted" if sig == signal.SIGINT else "terminated")
    assert not rec.exists(), list(rec.rglob("*"))  # no folder, no header-only tracks, no empty video
