"""The README's offline demo (`python tests/demo.py`) runs the whole pipeline from a checkout with the fixture weights."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from media import read_video

ROOT = Path(__file__).resolve().parents[1]


def test_the_offline_demo_writes_a_video_and_tracks(tmp_path):
    out = tmp_path / "demo"
    done = subprocess.run([sys.executable, str(ROOT / "tests" / "demo.py"), "--out-dir", str(out), "--frames", "6"],
                          capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert f"demo: open {out / 'overlay.mp4'}" in done.stdout
    assert len(read_video(out / "overlay.mp4")[0]) == 6
    records = [json.loads(line) for line in (out / "tracks.jsonl").read_text().splitlines()]
    assert records[0]["type"] == "header" and len(records) == 7
    assert sorted(p.name for p in out.iterdir()) == ["overlay.mp4", "tracks.jsonl", "walk.mp4"]
