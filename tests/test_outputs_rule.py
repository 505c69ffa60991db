"""The one rule for outputs (realtime/outputs.py), through the CLI in subprocesses, for every
subcommand that writes and every sidecar: no file a command writes may be an input (however
the path is spelled: symlink, `..`, hard link), a collision is one `error:` sentence with exit
2 and nothing is written; a re-export removes the sidecars it no longer writes."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from export_synthetic import write_synthetic
from media import numbered_frames, write_video
from realtime.frames import Frame, Person
from realtime.sinks.tracks import TrackWriter
from tests.mocap_synthetic import FPS, NAMES, synthetic_clip

ROOT = Path(__file__).resolve().parents[1]
UNWRITABLE = Path("/sys")  # read-only even for root (chmod does not stop root)


def _cli(*argv: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "realtime.cli", *map(str, argv)], capture_output=True, text=True, timeout=600,
                          cwd=cwd, env={**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"})


def _one_error(proc: subprocess.CompletedProcess, *expected: str) -> str:
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    err = proc.stderr
    assert err.startswith("error: ") and err.count("\n") == 1 and "Traceback" not in err, err
    for text in expected:
        assert text in err, err
    return err


def _motion_tracks(path: Path, *, performance: bool, frames: int = 20) -> Path:
    """308-keypoint tracks with 3D (BVH / glTF / FBX / VRMA can be made of them); with
    `performance` they carry face and contacts too (so exports write a curves sidecar)."""
    camera = synthetic_clip(frames)[4]
    image = np.zeros((2, 2, 3), np.uint8)
    with TrackWriter(path, keypoint_names=NAMES, image_wh=(640, 480), fps=FPS, source="synthetic", model={},
                     tracked=True) as writer:
        for t in range(frames):
            xy = 500.0 * camera[t, :, :2] / camera[t, :, 2:] + [320.0, 240.0]
            extra = {}
            if performance:
                extra = {"contacts": np.array([t % 4 < 2, t % 3 == 0])}
            person = Person(box=np.array([100, 20, 500, 470], np.float32), track_id=1, keypoints=xy.astype(np.float32),
                            keypoint_scores=np.where(np.isfinite(camera[t, :, 0]), 0.9, 0.0).astype(np.float32),
                            keypoints3d=camera[t].astype(np.float32), **extra)
            writer.write(Frame(index=t, timestamp=t / FPS, image=image, people=(person,)))
    return path


@pytest.fixture(scope="module")
def take(tmp_path_factory) -> Path:
    return _motion_tracks(tmp_path_factory.mktemp("take") / "take.jsonl", performance=True)


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


# -- export: the main file and every sidecar, spelled every way --------------------------------

SIDECARS = [("bvh", "walk.bvh", "walk.bvh.curves.json"), ("bvh", "walk.bvh", "walk.bvh.marks.json"),
            ("gltf", "walk.glb", "walk.glb.curves.json"), ("vrma", "walk.vrma", "walk.vrma.curves.json"),
            ("fbx", "walk.fbx", "walk.fbx.marks.json"), ("fbx", "walk.fbx", "walk.fbx.curves.json")]


@pytest.mark.parametrize("fmt,out,recording", SIDECARS, ids=[f"{f}-{r.split('.', 2)[2]}" for f, _, r in SIDECARS])
def test_an_export_sidecar_never_overwrites_the_recording(take, tmp_path, fmt, out, recording):
    """`export walk.bvh.curves.json --to bvh -o walk.bvh` once wrote its curves over its input."""
    source = tmp_path / recording
    shutil.copyfile(take, source)
    before = _snapshot(tmp_path)
    err = _one_error(_cli("export", source, "--to", fmt, "-o", tmp_path / out), "sidecar", "is the input",
                     "choose another output path")
    assert recording in err
    assert _snapshot(tmp_path) == before  # nothing written, the recording intact


@pytest.mark.parametrize("spelling", ["symlink", "hard link", "dot-dot"])
def test_a_sidecar_aliasing_the_recording_is_refused_however_spelled(take, tmp_path, spelling):
    source = tmp_path / "rec" / "take.jsonl"
    source.parent.mkdir()
    shutil.copyfile(take, source)
    (tmp_path / "sub").mkdir()
    if spelling == "symlink":
        os.symlink(source, tmp_path / "walk.bvh.curves.json")
        out = tmp_path / "walk.bvh"
    elif spelling == "hard link":
        os.link(source, tmp_path / "walk.bvh.marks.json")
        out = tmp_path / "walk.bvh"
    else:
        out = tmp_path / "sub" / ".." / "rec" / "take.jsonl"  # -o itself, through ..
    before = _snapshot(tmp_path)
    _one_error(_cli("export", source, "--to", "bvh", "-o", out), "is the input")
    assert _snapshot(tmp_path) == before


def test_a_re_export_removes_the_curves_it_no_longer_writes(take, tmp_path):
    out = tmp_path / "walk.glb"
    first = _cli("export", take, "--to", "glb", "-o", out)
    assert first.returncode == 0, first.stderr
    curves = tmp_path / "walk.glb.curves.json"
    assert json.loads(curves.read_text())["frames"] > 0
    plain = _motion_tracks(tmp_path / "plain.jsonl", performance=False)  # no face, no contacts: no curves
    second = _cli("export", plain, "--to", "gltf", "-o", out)
    assert second.returncode == 0, second.stderr
    assert out.is_file() and not curves.exists()  # not a sidecar describing the other take
    assert "removed" in second.stderr and str(curves) in second.stderr


def test_an_export_into_an_unwritable_folder_names_the_folder_for_every_format(take):
    formats = ["csv", "npz", "trc", "c3d", "coco", "bvh", "gltf", "vrma", "fbx", "blender"]
    for fmt in formats:
        proc = _cli("export", take, "--to", fmt, "--person", "1", "-o", UNWRITABLE / f"walk.{fmt}")
        err = _one_error(proc, f"the folder {UNWRITABLE} is not writable")
        assert "Blender" not in err, err  # the folder is to blame, not the converter


# -- smooth ------------------------------------------------------------------------------------

def test_smooth_writes_beside_its_input_and_never_onto_it(take, tmp_path):
    source = tmp_path / "take.jsonl"
    shutil.copyfile(take, source)
    os.link(source, tmp_path / "hard.jsonl")
    os.symlink(source, tmp_path / "soft.jsonl")
    before = source.read_bytes()
    for out in (source, tmp_path / "hard.jsonl", tmp_path / "soft.jsonl", tmp_path / "x" / ".." / "take.jsonl"):
        _one_error(_cli("smooth", source, "-o", out), "is the input")
    assert source.read_bytes() == before
    done = _cli("smooth", source)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "take_smooth.jsonl").is_file() and done.stdout.strip() == f"wrote {tmp_path / 'take_smooth.jsonl'}"
    _one_error(_cli("smooth", source, "-o", UNWRITABLE / "s.jsonl"), f"the folder {UNWRITABLE} is not writable")


# -- export-model ------------------------------------------------------------------------------

@pytest.fixture
def pose_checkpoint(fixtures_dir, tmp_path) -> Path:
    pytest.importorskip("onnx")
    path = tmp_path / "pose.safetensors"
    shutil.copyfile(fixtures_dir / "pose_weights.safetensors", path)
    return path


def test_export_model_never_overwrites_its_checkpoint(pose_checkpoint, tmp_path):
    before = _snapshot(tmp_path)
    os.symlink(pose_checkpoint, tmp_path / "alias.onnx")
    for out in (pose_checkpoint, tmp_path / "alias.onnx", tmp_path / "d" / ".." / "pose.safetensors"):
        _one_error(_cli("export-model", "--to", "onnx", "--task", "pose", "--checkpoint", pose_checkpoint,
                        "--input-size", "64x48",
                        "-o", out), "is the input")
    # the weights file beside the graph (<out>.data) may not be the checkpoint either
    os.link(pose_checkpoint, tmp_path / "m.onnx.data")
    _one_error(_cli("export-model", "--to", "onnx", "--task", "pose", "--checkpoint", pose_checkpoint, "--input-size", "64x48",
                    "-o", tmp_path / "m.onnx"), "its weights file", "is the input")
    (tmp_path / "alias.onnx").unlink()
    (tmp_path / "m.onnx.data").unlink()
    assert _snapshot(tmp_path) == before


def test_export_model_onto_a_folder_or_into_an_unwritable_one_is_one_sentence(pose_checkpoint, tmp_path):
    folder = tmp_path / "models"
    folder.mkdir()
    common = ["export-model", "--to", "onnx", "--task", "pose", "--checkpoint", pose_checkpoint, "--input-size", "64x48"]
    _one_error(_cli(*common, "-o", folder), "is a folder")
    _one_error(_cli(*common, "-o", UNWRITABLE / "pose.onnx"), f"the folder {UNWRITABLE} is not writable")
    assert list(folder.iterdir()) == []


def test_export_model_removes_a_stale_weights_file_of_an_earlier_export(pose_checkpoint, tmp_path):
    stale = tmp_path / "pose.onnx.data"
    stale.write_bytes(b"weights of an earlier, larger export")
    done = _cli("export-model", "--to", "onnx", "--task", "pose", "--checkpoint", pose_checkpoint, "--input-size", "64x48",
                "-o", tmp_path / "pose.onnx")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "pose.onnx").is_file() and not stale.exists()


# -- batch -------------------------------------------------------------------------------------

@pytest.mark.parametrize("option,words", [("--cuda-graphs", "--cuda-graphs needs a CUDA GPU"), ("--fp8", "--fp8 needs")])
def test_batch_refuses_what_run_refuses_before_any_worker_starts(tmp_path, option, words):
    pytest.importorskip("torch")
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA: the options are valid here")
    video = write_video(tmp_path / "v.mp4", numbered_frames(3))
    run = _cli("run", video, "--device", "cpu", option, "--no-progress", "--output-dir", tmp_path / "r")
    batch = _cli("batch", video, "--output-dir", tmp_path / "out", "--device", "cpu", option, "--no-progress")
    assert _one_error(batch, words) == _one_error(run, words)  # the same sentence
    assert sorted(p.name for p in tmp_path.iterdir()) == ["v.mp4"]  # no output folder, no .partial, no manifest


def test_batch_unit_folder_that_is_an_input_folder_is_refused(tmp_path):
    import cv2

    shots = tmp_path / "elsewhere" / "shots"
    shots.mkdir(parents=True)
    for i in range(2):
        cv2.imwrite(str(shots / f"{i}.png"), np.full((48, 64, 3), 40 * i, np.uint8))
    out = tmp_path / "out"
    out.mkdir()
    os.symlink(shots, out / "shots")  # DIR/shots would be replaced: it is the input folder
    before = _snapshot(shots)
    _one_error(_cli("batch", shots, "--output-dir", out, "--device", "cpu", "--no-progress"), "holds the input")
    assert _snapshot(shots) == before


# -- run (the rule it already followed, now through the same function) -----------------------

def test_run_refuses_tracks_onto_its_video_through_a_hard_link(tmp_path):
    video = write_video(tmp_path / "v.mp4", numbered_frames(3))
    os.link(video, tmp_path / "t.jsonl")
    before = video.read_bytes()
    _one_error(_cli("run", video, "--device", "cpu", "--no-progress", "--tracks", tmp_path / "t.jsonl", "--no-video"),
               "is the input")
    assert video.read_bytes() == before


def test_csv_export_with_the_synthetic_writer_still_works(tmp_path):
    tracks = write_synthetic(tmp_path / "run.jsonl")
    done = _cli("export", tracks, "--to", "csv")
    assert done.returncode == 0 and (tmp_path / "run.csv").is_file(), done.stderr
