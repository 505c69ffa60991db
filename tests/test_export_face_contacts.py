"""Face weights, head rotation and foot contacts from the tracks into the offline exports:
CSV columns, and the curves sidecar beside glTF / BVH (`realtime/export/curves.py`)."""

from __future__ import annotations

import csv
import json

import numpy as np
import pygltflib
import pytest

from realtime.cli import main
from realtime.frames import Frame, Person
from realtime.rig.face import ARKIT_NAMES
from realtime.sinks.tracks import TrackWriter
from tests.mocap_synthetic import FPS, NAMES, synthetic_clip

FRAMES = 30
NO_FACE, ABSENT, NO_CONTACTS = 5, 10, (0, 1, 2)  # frames without a face read, without the person, before the floor
_IMAGE = np.zeros((2, 2, 3), np.uint8)


def face(t: int) -> np.ndarray:
    return ((t + np.arange(len(ARKIT_NAMES))) % 11) / 10.0


def head(t: int) -> np.ndarray:
    angle = np.radians(2.0 * t)  # about Y
    return np.array([0.0, np.sin(angle / 2), 0.0, np.cos(angle / 2)])


def contacts(t: int) -> np.ndarray:
    return np.array([t % 4 < 2, t % 3 == 0])


@pytest.fixture(scope="module")
def tracks_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("performance") / "take.jsonl"
    camera = synthetic_clip(FRAMES)[4]
    with TrackWriter(path, keypoint_names=NAMES, image_wh=(640, 480), fps=FPS, source="synthetic", model={},
                     tracked=True) as writer:
        for t in range(FRAMES):
            xy = 500.0 * camera[t, :, :2] / camera[t, :, 2:] + [320.0, 240.0]
            person = Person(box=np.array([100, 20, 500, 470], np.float32), track_id=3, keypoints=xy.astype(np.float32),
                            keypoint_scores=np.where(np.isfinite(camera[t, :, 0]), 0.9, 0.0).astype(np.float32),
                            keypoints3d=camera[t].astype(np.float32),
                            face=None if t == NO_FACE else face(t).astype(np.float32),
                            head_rotation=None if t == NO_FACE else head(t).astype(np.float32),
                            contacts=None if t in NO_CONTACTS else contacts(t))
            writer.write(Frame(index=t, timestamp=t / FPS, image=_IMAGE, people=() if t == ABSENT else (person,)))
    return path


def test_csv_has_face_head_and_contact_columns(tracks_file, tmp_path):
    out = tmp_path / "take.csv"
    assert main(["export", str(tracks_file), "--to", "csv", "-o", str(out)]) == 0
    with open(out, newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == FRAMES
    header = list(rows[0])
    face_columns = [f"p3_face_{name}" for name in ARKIT_NAMES]
    extra = face_columns + ["p3_head_qx", "p3_head_qy", "p3_head_qz", "p3_head_qw", "p3_contact_left", "p3_contact_right"]
    assert header[-len(extra):] == extra  # after the person's keypoints
    for t, row in enumerate(rows):
        if t == ABSENT:
            assert all(row[c] == "" for c in extra)
            continue
        if t == NO_FACE:
            assert all(row[c] == "" for c in face_columns + ["p3_head_qw"])
        else:
            np.testing.assert_allclose([float(row[c]) for c in face_columns], face(t), atol=5e-4)
            np.testing.assert_allclose([float(row[f"p3_head_q{a}"]) for a in "xyzw"], head(t), atol=5e-4)
        expected = ["", ""] if t in NO_CONTACTS else [str(v) for v in contacts(t).astype(int).tolist()]  # not known: empty
        assert [row["p3_contact_left"], row["p3_contact_right"]] == expected


def test_without_face_or_contacts_the_csv_has_no_such_columns(tmp_path):
    from export_synthetic import write_synthetic

    out = tmp_path / "walk.csv"
    assert main(["export", str(write_synthetic(tmp_path / "walk.jsonl")), "--to", "csv", "-o", str(out)]) == 0
    header = out.read_text().splitlines()[0].split(",")
    assert not any("_face_" in c or "_head_q" in c or "_contact_" in c for c in header)


@pytest.mark.parametrize("fmt, suffix", [("gltf", ".glb"), ("bvh", ".bvh")])
def test_motion_exports_carry_the_curves_beside_them(tracks_file, tmp_path, fmt, suffix):
    out = tmp_path / f"take{suffix}"
    assert main(["export", str(tracks_file), "--to", fmt, "-o", str(out)]) == 0
    curves = json.loads((tmp_path / f"take{suffix}.curves.json").read_text())
    assert curves["fps"] == FPS and curves["frames"] == FRAMES
    np.testing.assert_allclose(curves["times"], np.arange(FRAMES) / FPS, atol=1e-6)
    assert curves["blendshapes"]["names"] == list(ARKIT_NAMES)
    weights, heads = curves["blendshapes"]["weights"], curves["head"]
    assert len(weights) == len(heads) == FRAMES
    for t in range(FRAMES):
        if t in (NO_FACE, ABSENT):
            assert weights[t] is None and heads[t] is None
        else:
            np.testing.assert_allclose(weights[t], face(t), atol=5e-4)
            np.testing.assert_allclose(heads[t], head(t), atol=5e-4)
    expected = [[None, None] if t in NO_CONTACTS or t == ABSENT else contacts(t).astype(int).tolist() for t in range(FRAMES)]
    assert curves["contacts"] == {"left": [e[0] for e in expected], "right": [e[1] for e in expected]}
    if fmt == "gltf":  # the .glb itself is as without face: nodes and one animation on the same frame times
        gltf = pygltflib.GLTF2().load(str(out))
        (animation,) = gltf.animations
        times = gltf.accessors[animation.samplers[0].input]
        assert times.count == FRAMES and times.max[0] == pytest.approx(curves["times"][-1], abs=1e-5)
