"""`sapiens-rt batch` against hostile inputs, through the CLI in a subprocess: files that
cannot be opened, names that collide with the batch's own, outputs inside the input folder,
a manifest line cut by a crash, an unwritable output folder and an unreachable Ray."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from media import gaussian_marker, write_video
from realtime.batch.plan import MANIFEST, append_manifest, find_videos, output_names, read_manifest

ROOT = Path(__file__).resolve().parents[1]


def _batch(fixtures_dir: Path, *argv: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "realtime.cli", "batch", *argv, "--workers", "1", "--tasks", "pose",
           "--checkpoint", f"pose={fixtures_dir / 'pose_weights.safetensors'}", "--device", "cpu",
           "--boxes-from", "frame", "--input-size", "64x48", "--no-progress", "--no-video"]
    return subprocess.run(cmd, env={**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"},
                          capture_output=True, text=True, timeout=300)


def _marker_clip(path: Path, n: int) -> Path:
    return write_video(path, [gaussian_marker(48, 64, 10 + 4 * i, 20, 5) for i in range(n)], fps=10)


def test_unopenable_files_collisions_outputs_inside_inputs_and_a_cut_manifest_line(tmp_path, fixtures_dir):
    footage = tmp_path / "footage"
    (footage / "day").mkdir(parents=True)
    _marker_clip(footage / "good.mp4", 4)
    _marker_clip(footage / "batch.jsonl.mp4", 3)  # its stem is the manifest's name
    _marker_clip(footage / "day" / "x.mp4", 3)  # works in out/x.partial ...
    _marker_clip(footage / "day" / "x.partial.mp4", 5)  # ... which is this one's stem
    (footage / "text.mp4").write_text("not a video at all")
    (footage / "empty.mp4").write_bytes(b"")
    out = footage / "out"  # the outputs land inside the input folder the glob walks
    pattern = str(footage / "**" / "*.mp4")

    first = _batch(fixtures_dir, pattern, "--output-dir", str(out))
    assert first.returncode == 1, first.stderr[-3000:]  # some failed; no traceback, no crash of the whole batch
    assert "Traceback" not in first.stderr and "AttributeError" not in first.stderr
    assert "4 done, 2 failed, 0 already done" in first.stdout, first.stdout
    for bad in ("text.mp4", "empty.mp4"):  # each unopenable file is failed with its reason, in the summary
        assert f"failed: {footage / bad}: File {footage / bad} cannot be read as video" in first.stdout
    records = read_manifest(out)
    by_name = {Path(v).name: r for v, r in records.items()}
    names = {video: r["name"] for video, r in by_name.items() if r["status"] == "done"}
    assert set(names) == {"good.mp4", "batch.jsonl.mp4", "x.mp4", "x.partial.mp4"}
    assert names["good.mp4"] == "good" and names["x.mp4"] == "x"
    assert names["batch.jsonl.mp4"].startswith("batch.jsonl-") and names["x.partial.mp4"].startswith("x.partial-")
    frames = {"good.mp4": 4, "batch.jsonl.mp4": 3, "x.mp4": 3, "x.partial.mp4": 5}
    for video, name in names.items():  # every folder holds its own video's rows, none was deleted
        rows = (out / name / "tracks.jsonl").read_text().splitlines()[1:]
        assert len(rows) == frames[video] == by_name[video]["frames"]
    assert (out / MANIFEST).is_file() and not list(out.glob("*.partial"))

    # A crash while the last manifest line was being written: cut it in the middle.
    lines = (out / MANIFEST).read_bytes().splitlines(keepends=True)
    cut = json.loads(lines[-1])
    (out / MANIFEST).write_bytes(b"".join(lines[:-1]) + lines[-1][: len(lines[-1]) // 2])
    kept = {n: (out / names[n] / "tracks.jsonl").stat().st_mtime_ns for n in names if names[n] != cut["name"]}

    second = _batch(fixtures_dir, pattern, "--output-dir", str(out))
    assert second.returncode == 1 and "Traceback" not in second.stderr, second.stderr[-3000:]
    redo = 1 if cut["status"] == "done" else 0
    # the batch's own outputs (tracks, folders, manifest) were not taken as inputs
    assert f"{redo} done, 2 failed, {4 - redo} already done" in second.stdout, second.stdout
    raw = (out / MANIFEST).read_bytes().split(b"\n")
    assert raw[len(lines) - 1] == lines[-1][: len(lines[-1]) // 2]  # the cut line stays cut, nothing joined onto it
    assert all(json.loads(line) for line in raw[len(lines):] if line)
    assert all(r["status"] == "done" for r in read_manifest(out).values()
               if "text" not in r["video"] and "empty" not in r["video"])
    assert {n: (out / names[n] / "tracks.jsonl").stat().st_mtime_ns for n in kept} == kept  # nothing finished was redone


def test_an_unwritable_output_folder_is_one_error_line_before_any_worker(tmp_path, fixtures_dir):
    video = _marker_clip(tmp_path / "clip.mp4", 3)
    proc = _batch(fixtures_dir, str(video), "--output-dir", "/sys")  # read-only even for root
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("error: Cannot write into the output folder /sys")
    assert "choose a writable --output-dir" in proc.stderr and not proc.stdout


def test_an_unreachable_ray_address_is_one_sentence_within_its_timeout(tmp_path, fixtures_dir):
    pytest.importorskip("ray")
    video = _marker_clip(tmp_path / "clip.mp4", 3)
    proc = _batch(fixtures_dir, str(video), "--output-dir", str(tmp_path / "out"), "--ray", "127.0.0.1:1", "--ray-timeout", "5")
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    assert "Cannot reach the Ray cluster at 127.0.0.1:1 within 5 s" in proc.stderr
    assert "ray start --head --port=6379" in proc.stderr
    assert not list((tmp_path / "out").iterdir())  # nothing recorded, nothing run


def test_outputs_are_never_inputs_however_the_glob_is_written(tmp_path):
    out = tmp_path / "out"
    for path in ("a.mp4", "out/a/overlay.mp4", "out/b.partial/overlay.mp4", "old.partial/c.mp4", "out/d.mp4"):
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_bytes(b"x")
    (out / MANIFEST).write_text("")
    for spec in (str(tmp_path / "**" / "*"), str(tmp_path / "**" / "*.mp4"), str(out / "*" / "*.mp4")):
        found = find_videos([str(tmp_path / "a.mp4"), spec], output_dir=out)
        assert all(p.name != "overlay.mp4" and "partial" not in str(p) and p.name != MANIFEST for p in found), spec
    assert find_videos([str(out)], output_dir=out) == [(out / "d.mp4").resolve()]  # a video the user put there


def test_reserved_names_and_a_manifest_line_after_a_cut_one(tmp_path):
    videos = [tmp_path / "batch.jsonl", tmp_path / "q.partial.mp4", tmp_path / "q.mp4", tmp_path / ".hidden.mp4"]
    names = output_names(videos)
    assert names[videos[2]] == "q" and len(set(names.values())) == 4
    assert all(n not in ("batch.jsonl", "q.partial", ".hidden") and not n.endswith(".partial") for n in names.values())
    (tmp_path / MANIFEST).write_bytes(b'{"video": "a", "status": "done"}\n{"video": "b", "sta')
    append_manifest(tmp_path, {"video": "c", "status": "done"})
    assert set(read_manifest(tmp_path)) == {"a", "c"}
    assert (tmp_path / MANIFEST).read_bytes().endswith(b'"sta\n{"video": "c", "status": "done"}\n')
