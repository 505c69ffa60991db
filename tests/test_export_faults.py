"""`sapiens-rt export` against hostile cases, through the CLI in a subprocess: an output that
is the input, a folder holding an earlier, longer export, stills of different sizes, ids
outside int64, a run too short for anyone to get an id, and a head-only checkpoint."""

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from export_synthetic import FPS, IMAGE_SIZE, NAMES, make_frame, write_synthetic
from media import gaussian_marker, write_video
from realtime.sinks.tracks import TrackWriter

ROOT = Path(__file__).resolve().parents[1]


def _cli(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "realtime.cli", *argv], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"})


def _one_error(proc: subprocess.CompletedProcess) -> str:
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert proc.stderr.startswith("error: ") and proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr, proc.stderr
    return proc.stderr


@pytest.fixture
def tracks(tmp_path) -> Path:
    return write_synthetic(tmp_path / "run.jsonl")


def test_an_output_that_is_the_input_is_refused_as_run_refuses_it(tracks, tmp_path):
    before = tracks.read_bytes()
    os.link(tracks, tmp_path / "same.jsonl")
    os.symlink(tracks, tmp_path / "alias.jsonl")
    for out in (tracks, tmp_path / "same.jsonl", tmp_path / "alias.jsonl", tmp_path / "sub" / ".." / "run.jsonl"):
        err = _one_error(_cli("export", str(tracks), "--to", "csv", "-o", str(out)))
        assert f"-o {out} is the input {tracks} itself and would overwrite it; choose another output path." in err
    named_csv = tmp_path / "take.csv"  # a recording named .csv: the default output would be itself
    named_csv.write_bytes(before)
    err = _one_error(_cli("export", str(named_csv), "--to", "csv"))
    assert "is the input" in err and named_csv.read_bytes() == before
    assert tracks.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == ["alias.jsonl", "run.jsonl",
                                                                                            "same.jsonl", "take.csv"]


def test_openpose_into_a_folder_with_a_longer_earlier_export_removes_only_its_own_files(tmp_path):
    long = write_synthetic(tmp_path / "a" / "run.jsonl", num_frames=6)
    short = write_synthetic(tmp_path / "b" / "run.jsonl", num_frames=3)
    folder = tmp_path / "json"
    first = _cli("export", str(long), "--to", "openpose", "-o", str(folder))
    assert first.returncode == 0 and not first.stderr, first.stderr
    (folder / "notes.txt").write_text("mine")
    (folder / "other_000000000005_keypoints.json").write_text("{}")  # another recording's export
    second = _cli("export", str(short), "--to", "openpose", "-o", str(folder))
    assert second.returncode == 0, second.stderr
    assert second.stderr.count("\n") == 1 and f"removed 3 OpenPose files of an earlier export from {folder}" in second.stderr
    ours = sorted(p.name for p in folder.glob("run_*_keypoints.json"))
    assert ours == [f"run_{i:012d}_keypoints.json" for i in range(3)]
    assert (folder / "notes.txt").read_text() == "mine" and (folder / "other_000000000005_keypoints.json").exists()
    assert all("people" in json.loads((folder / name).read_text()) for name in ours)


def test_coco_of_a_stills_run_gives_every_image_its_own_size(tmp_path):
    sizes = [(640, 480), (300, 200), (1024, 768)]
    path = tmp_path / "stills.jsonl"
    with TrackWriter(path, keypoint_names=NAMES, image_wh=sizes[0], fps=FPS, source="photos/", model={},
                     stills=lambda i: f"photo{i}.jpg") as writer:
        for i, (w, h) in enumerate(sizes):
            writer.write(dataclasses.replace(make_frame(i, with_3d=False), image=np.zeros((h, w, 3), np.uint8)))
    proc = _cli("export", str(path), "--to", "coco", "-o", str(tmp_path / "coco.json"))
    assert proc.returncode == 0, proc.stderr
    images = json.loads((tmp_path / "coco.json").read_text())["images"]
    assert [(im["width"], im["height"]) for im in images] == sizes


def test_track_ids_outside_int64_are_one_sentence_and_write_nothing(tracks, tmp_path):
    lines = tracks.read_text().splitlines()
    frame = json.loads(lines[1])
    frame["people"][0]["id"] = 2 ** 70
    lines[1] = json.dumps(frame)
    huge = tmp_path / "huge.jsonl"
    huge.write_text("\n".join(lines) + "\n")
    for fmt in ("npz", "csv", "coco"):
        err = _one_error(_cli("export", str(huge), "--to", fmt, "-o", str(tmp_path / f"out.{fmt}")))
        assert "huge.jsonl line 2" in err and "outside the 64-bit range" in err and str(2 ** 70)[:20] in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["huge.jsonl", "run.jsonl"]


def test_a_run_too_short_to_confirm_anyone(tmp_path):
    """Two frames: the tracker confirms nobody, so every person is a tentative detection (id null)."""
    path = tmp_path / "short.jsonl"
    with TrackWriter(path, keypoint_names=NAMES, image_wh=IMAGE_SIZE, fps=FPS, source="s.mp4", model={}, tracked=True) as writer:
        for i in range(2):
            frame = make_frame(i)
            writer.write(dataclasses.replace(frame, people=tuple(dataclasses.replace(p, track_id=None) for p in frame.people)))
    for fmt in ("trc", "c3d", "bvh", "gltf"):
        err = _one_error(_cli("export", str(path), "--to", fmt, "-o", str(tmp_path / f"out.{fmt}")))
        assert "has nobody with a track id in its 2 frames (a run shorter than 3 frames never confirms anyone)" in err, err
        assert "--person" not in err and not (tmp_path / f"out.{fmt}").exists()
    outs = {"csv": tmp_path / "o.csv", "npz": tmp_path / "o.npz", "openpose": tmp_path / "op", "coco": tmp_path / "o.json"}
    for fmt, out in outs.items():
        proc = _cli("export", str(path), "--to", fmt, "-o", str(out))
        assert proc.returncode == 0 and proc.stderr.count("\n") == 1, proc.stderr
        assert "WARNING" in proc.stderr and "nobody with a track id in its 2 frames" in proc.stderr
        assert f"the {fmt} output has its 2 frames and no person" in proc.stderr
    assert len((outs["csv"]).read_text().splitlines()) == 3  # header + 2 frame rows
    with np.load(outs["npz"]) as npz:
        assert npz["keypoints"].shape[:2] == (0, 2) and list(npz["frames"]) == [0, 1]
    assert len(list(outs["openpose"].glob("*.json"))) == 2
    coco = json.loads(outs["coco"].read_text())
    assert len(coco["images"]) == 2 and coco["annotations"] == []


def test_a_head_only_checkpoint_names_the_missing_keys(tmp_path, fixtures_dir):
    video = write_video(tmp_path / "clip.mp4", [gaussian_marker(48, 64, 20, 20, 5) for _ in range(3)], fps=10)
    head_only = fixtures_dir / "albedo_head_weights.safetensors"
    err = _one_error(_cli("run", str(video), "--tasks", "albedo", "--checkpoint", f"albedo={head_only}", "--device", "cpu",
                          "--no-progress", "--boxes-from", "frame", "--tracks", str(tmp_path / "t.jsonl"),
                          "--output-dir", str(tmp_path / "rec")))
    assert "backbone keys missing (backbone.cls_token;" in err and "It holds an albedo head and no backbone." in err
    assert "looks like" not in err and not (tmp_path / "t.jsonl").exists()
