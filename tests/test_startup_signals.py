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


@pytest.mark.parametrize("sig,code,word", [(signal.SIGINT, 130, "interrupted"), (signal.SIGTERM, 143, "terminated")])
def test_a_signal_that_a_library_reports_as_its_own_error_still_stops_the_run(tmp_path, fixtures_dir, monkeypatch, capsys,
                                                                              sig, code, word):
    """safetensors' Rust reader turns the KeyboardInterrupt of a signal that lands inside it into
    a ValueError ('could not determine the shape of object type ...'), which the loader reports as
    an unreadable checkpoint. The signal wins: exit 130/143, not 'delete it and download it again'."""
    import safetensors.torch

    from realtime import cli

    def load_file_hit_by_a_signal(path, device="cpu"):
        try:
            cli._raise_on_signal(sig, None)  # what the handler does when the signal arrives mid-read
        except KeyboardInterrupt:
            raise ValueError("could not determine the shape of object type 'torch.storage.UntypedStorage'") from None

    monkeypatch.setattr(safetensors.torch, "load_file", load_file_hit_by_a_signal)
    src = write_video(tmp_path / "v.mp4", [gaussian_marker(96, 128, 40, 50, 6)] * 3)
    rec = tmp_path / "rec"
    got = cli.main(["run", str(src), "--output-dir", str(rec), "--tasks", "pose", "--device", "cpu", "--no-progress",
                    "--boxes-from", "frame",
                    "--checkpoint", f"pose={fixtures_dir / 'pose_weights.safetensors'}"])
    err = capsys.readouterr().err
    assert got == code and err.strip().splitlines()[-1] == word and "error:" not in err, err
    assert not rec.exists()
    assert cli.main(["run", str(tmp_path / "missing.mp4")]) == 2  # the next run starts with no signal on record
