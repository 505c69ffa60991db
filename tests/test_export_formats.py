"""Every export format, read back by an independent reader (not our own code)."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest

from export_synthetic import FPS, IMAGE_SIZE, NAMES, NUM_FRAMES, K, expected_scores, expected_xy, expected_xyz, write_synthetic
from realtime.data import keypoint_table
from realtime.errors import UserError
from realtime.export.formats import export_tracks

LEFT_HIP, RIGHT_HIP = NAMES.index("left_hip"), NAMES.index("right_hip")


@pytest.fixture()
def tracks_file(tmp_path):
    return write_synthetic(tmp_path / "walk.jsonl")


@pytest.fixture()
def tracks_2d(tmp_path):
    return write_synthetic(tmp_path / "walk2d.jsonl", with_3d=False, people_ids=(7,))


def test_csv_read_with_csv_module(tracks_file):
    out = export_tracks(tracks_file, "csv", subset="coco17")
    with open(out, newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == NUM_FRAMES
    header = list(rows[0])
    assert header[:5] == ["frame", "time", "p7_nose_x", "p7_nose_y", "p7_nose_score"]
    assert len(header) == 2 + 2 * 17 * 6  # two persons, 17 keypoints, x y score X Y Z
    wrist = NAMES.index("left_wrist")  # coco17 index 9 is 308 index 62
    assert float(rows[3]["p7_left_wrist_x"]) == pytest.approx(expected_xy(7, 3 / FPS)[wrist, 0], abs=0.006)
    assert float(rows[3]["p7_left_wrist_Z"]) == pytest.approx(expected_xyz(7, 3 / FPS)[wrist, 2], abs=6e-5)
    assert float(rows[3]["p9_left_wrist_score"]) == pytest.approx(expected_scores(9, 3)[wrist], abs=6e-4)
    assert rows[2]["p7_nose_x"] == "" and rows[0]["p9_nose_x"] == ""  # absent -> empty cell
    assert rows[4]["p7_left_shoulder_x"] == "" and rows[4]["p7_left_shoulder_score"] != ""
    assert float(rows[1]["time"]) == pytest.approx(1 / FPS)


def test_npz_read_with_numpy(tracks_file, tmp_path):
    out = export_tracks(tracks_file, "npz", tmp_path / "x.npz")
    data = np.load(out)  # allow_pickle stays False
    assert list(data["ids"]) == [7, 9]
    assert data["keypoints"].shape == (2, NUM_FRAMES, K, 2) and data["keypoints3d"].shape == (2, NUM_FRAMES, K, 3)
    assert list(data["keypoint_names"]) == NAMES and float(data["fps"]) == FPS and list(data["image_size"]) == list(IMAGE_SIZE)
    np.testing.assert_allclose(data["keypoints"][1, 5], expected_xy(9, 5 / FPS), atol=0.006)
    np.testing.assert_array_equal(data["present"][1], [False, False, False, True, True, True])
    assert json.loads(str(data["header_json"]))["source"] == "synthetic.mp4"


def test_openpose_json_schema_and_mapping(tracks_file, tmp_path):
    folder = export_tracks(tracks_file, "openpose", tmp_path / "op")
    files = sorted(folder.iterdir())
    assert [f.name for f in files] == [f"walk_{i:012d}_keypoints.json" for i in range(NUM_FRAMES)]
    empty = json.loads(files[2].read_text())
    assert empty["people"] == []
    doc = json.loads(files[3].read_text())
    assert [p["person_id"] for p in doc["people"]] == [[7], [9]]
    for person in doc["people"]:
        assert len(person["pose_keypoints_2d"]) == 25 * 3
        assert len(person["hand_left_keypoints_2d"]) == len(person["hand_right_keypoints_2d"]) == 21 * 3
        assert person["face_keypoints_2d"] == [] and person["pose_keypoints_3d"] == []
        assert all(0.0 <= c <= 1.0 for c in person["pose_keypoints_2d"][2::3])
    pose = np.array(doc["people"][0]["pose_keypoints_2d"]).reshape(25, 3)
    xy = expected_xy(7, 3 / FPS)
    np.testing.assert_allclose(pose[0, :2], xy[NAMES.index("nose")], atol=0.006)
    np.testing.assert_allclose(pose[2, :2], xy[NAMES.index("right_shoulder")], atol=0.006)
    neck = (xy[NAMES.index("left_shoulder")] + xy[NAMES.index("right_shoulder")]) / 2
    np.testing.assert_allclose(pose[1, :2], neck, atol=0.006)
    np.testing.assert_allclose(pose[8, :2], (xy[LEFT_HIP] + xy[RIGHT_HIP]) / 2, atol=0.006)
    np.testing.assert_allclose(pose[24, :2], xy[NAMES.index("right_heel")], atol=0.006)
    hand = np.array(doc["people"][0]["hand_right_keypoints_2d"]).reshape(21, 3)
    np.testing.assert_allclose(hand[0, :2], xy[NAMES.index("right_wrist")], atol=0.006)
    np.testing.assert_allclose(hand[8, :2], xy[NAMES.index("right_forefinger4")], atol=0.006)
    # Frame 4: left shoulder unknown -> 0,0,0 (OpenPose's convention), and so is the derived Neck.
    pose4 = np.array(json.loads(files[4].read_text())["people"][0]["pose_keypoints_2d"]).reshape(25, 3)
    assert pose4[5].tolist() == [0, 0, 0] and pose4[1].tolist() == [0, 0, 0]


def test_coco_wholebody_loads_with_pycocotools(tracks_file, tmp_path):
    from pycocotools.coco import COCO

    out = export_tracks(tracks_file, "coco", tmp_path / "wb.json")
    coco = COCO(str(out))
    assert len(coco.getImgIds()) == NUM_FRAMES
    assert len(coco.getAnnIds()) == 5 + 3  # person 7 in 5 frames, person 9 in 3
    category = coco.loadCats(coco.getCatIds())[0]
    assert len(category["keypoints"]) == 17 and category["keypoints"] == keypoint_table()["coco17_names"]
    annotation = coco.loadAnns(coco.getAnnIds(imgIds=[4]))[0]  # frame 3, person 7
    assert annotation["track_id"] == 7
    parts = [annotation[f] for f in ("keypoints", "foot_kpts", "face_kpts", "lefthand_kpts", "righthand_kpts")]
    points = np.array(sum(parts, [])).reshape(-1, 3)
    assert len(points) == 133
    mapping = {int(k): v for k, v in keypoint_table()["coco_wholebody_to_308"].items()}
    assert set(np.flatnonzero(points[:, 2] == 2)) == set(mapping)  # v=2 exactly where the table maps
    assert (points[[i for i in range(133) if i not in mapping]] == 0).all()
    xy = expected_xy(7, 3 / FPS)
    np.testing.assert_allclose(points[95, :2], xy[mapping[95]], atol=0.006)  # left_thumb4
    assert annotation["face_valid"] is False and annotation["lefthand_valid"] is True
    assert annotation["bbox"] == [10.0, 20.0, 293.0, 380.0] and annotation["num_keypoints"] == 17
    # A plain COCO-17 file also loads, and the unknown left shoulder of frame 4 has v=0.
    plain = COCO(str(export_tracks(tracks_file, "coco", tmp_path / "c17.json", subset="coco17")))
    frame4 = plain.loadAnns(plain.getAnnIds(imgIds=[5]))[0]
    assert len(frame4["keypoints"]) == 17 * 3 and frame4["keypoints"][5 * 3: 5 * 3 + 3] == [0, 0, 0]
    assert frame4["num_keypoints"] == 16


def _parse_trc(path):
    """A minimal independent TRC parser: header dict, marker names, (frames, times, (T, M, 3))."""
    lines = path.read_text().split("\n")
    header = dict(zip(lines[1].split("\t"), lines[2].split("\t")))
    markers = [name for name in lines[3].split("\t")[2:] if name]
    rows = [line.split("\t") for line in lines[6:] if line.strip()]
    frames = [int(r[0]) for r in rows]
    times = [float(r[1]) for r in rows]
    values = np.array([[float(v) for v in r[2:]] for r in rows]).reshape(len(rows), len(markers), 3)
    return header, markers, frames, times, values


def test_trc_3d_read_by_independent_parser(tracks_file, tmp_path):
    out = export_tracks(tracks_file, "trc", tmp_path / "walk.trc", person=7)
    header, markers, frames, times, values = _parse_trc(out)
    assert header["DataRate"] == header["CameraRate"] == header["OrigDataRate"] == "25"
    assert header["NumFrames"] == str(NUM_FRAMES) and header["NumMarkers"] == str(K + 1) and header["Units"] == "m"
    assert markers == NAMES + ["hip_center"]
    assert frames == list(range(1, NUM_FRAMES + 1)) and times == pytest.approx(np.arange(NUM_FRAMES) / FPS)
    xyz = expected_xyz(7, 3 / FPS)
    y_up = xyz * [1, -1, -1]  # camera (y down, z forward) -> OpenSim (Y up)
    np.testing.assert_allclose(values[3, :K], y_up, atol=2e-5)
    np.testing.assert_allclose(values[3, K], (y_up[LEFT_HIP] + y_up[RIGHT_HIP]) / 2, atol=2e-5)
    assert np.isnan(values[2]).all()  # nobody in frame 2


def test_trc_2d_pixels(tracks_2d, tmp_path):
    out = export_tracks(tracks_2d, "trc", tmp_path / "walk2d.trc", subset="coco17")
    header, markers, _, _, values = _parse_trc(out)
    assert header["Units"] == "px" and markers == keypoint_table()["coco17_names"] + ["hip_center"]
    xy = expected_xy(7, 1 / FPS)
    np.testing.assert_allclose(values[1, 0], [xy[0, 0], IMAGE_SIZE[1] - xy[0, 1], 0.0], atol=0.006)
    assert np.isnan(values[4, 5]).all()  # left shoulder unknown in frame 4


@pytest.mark.optional
def test_trc_read_by_opensim(tracks_file, tmp_path):
    opensim = pytest.importorskip("opensim", reason="OpenSim's python package is not installed (pip install opensim)")
    out = export_tracks(tracks_file, "trc", tmp_path / "walk.trc", person=7)
    table = opensim.TimeSeriesTableVec3(str(out))
    assert table.getNumRows() == NUM_FRAMES and table.getNumColumns() == K + 1
    assert list(table.getColumnLabels()) == NAMES + ["hip_center"]
    assert table.getTableMetaDataAsString("DataRate") == "25" and table.getTableMetaDataAsString("Units") == "m"
    assert list(table.getIndependentColumn()) == pytest.approx(np.arange(NUM_FRAMES) / FPS)
    nose = table.getRowAtIndex(3)[0]
    expected = expected_xyz(7, 3 / FPS)[0] * [1, -1, -1]
    np.testing.assert_allclose([nose.get(0), nose.get(1), nose.get(2)], expected, atol=2e-5)
    assert np.isnan(table.getRowAtIndex(2)[0].get(0))


def _expected_c3d_points():
    """(T, K+1, 3) expected Z-up marker positions of person 7, NaN where unknown."""
    points = np.full((NUM_FRAMES, K + 1, 3), np.nan)
    for frame in range(NUM_FRAMES):
        if frame != 2:
            xyz = expected_xyz(7, frame / FPS)
            points[frame, :K] = xyz
            points[frame, K] = (xyz[LEFT_HIP] + xyz[RIGHT_HIP]) / 2
    return np.stack([points[..., 0], points[..., 2], -points[..., 1]], axis=-1)  # camera -> Z up


def test_c3d_read_by_ezc3d(tracks_file, tmp_path):
    import ezc3d

    out = export_tracks(tracks_file, "c3d", tmp_path / "walk.c3d", person=7)
    c3d = ezc3d.c3d(str(out))
    point = c3d["parameters"]["POINT"]
    labels = list(point["LABELS"]["value"]) + list(point["LABELS2"]["value"])  # C3D splits >255 labels
    assert labels == NAMES + ["hip_center"] and point["USED"]["value"][0] == K + 1
    assert point["RATE"]["value"][0] == FPS and point["UNITS"]["value"] == ["m"]
    data = c3d["data"]["points"]
    assert data.shape == (4, K + 1, NUM_FRAMES)
    np.testing.assert_allclose(data[:3].transpose(2, 1, 0), _expected_c3d_points(), atol=2e-5)
    residuals = c3d["data"]["meta_points"]["residuals"][0]  # (M, T)
    assert (residuals[:, 2] == -1).all() and (residuals[:, [0, 1, 3, 4, 5]] > 0).all()
    confident, unsure = np.argmax(expected_scores(7, 0)), np.argmin(expected_scores(7, 0))
    assert residuals[confident, 0] < residuals[unsure, 0]  # higher score -> smaller residual


def test_c3d_read_by_c3d_package(tracks_file, tmp_path):
    c3d = pytest.importorskip("c3d")
    out = export_tracks(tracks_file, "c3d", tmp_path / "walk.c3d", person=7)
    with open(out, "rb") as handle, pytest.warns(UserWarning, match="No analog"):
        reader = c3d.Reader(handle)
        assert reader.point_used == K + 1 and reader.point_rate == FPS and reader.frame_count == NUM_FRAMES
        assert reader.get("POINT:UNITS").string_value.strip() == "m"
        labels = [s.strip() for s in reader.point_labels] + [s.strip() for s in reader.get("POINT:LABELS2").string_array]
        assert labels == NAMES + ["hip_center"]
        frames = [points.copy() for _, points, _ in reader.read_frames()]
    values = np.stack(frames)  # (T, M, 5): x, y, z, residual, cameras
    expected = _expected_c3d_points()
    known = np.isfinite(expected).all(axis=-1)
    np.testing.assert_allclose(values[..., :3][known], expected[known], atol=2e-5)
    assert (values[..., 3][~known] == -1).all() and (values[..., 3][known] >= 0).all()


def test_single_person_formats_ask_for_a_person_and_c3d_needs_3d(tracks_file, tracks_2d, tmp_path):
    with pytest.raises(UserError, match=r"ids: 7, 9\); choose one with --person"):
        export_tracks(tracks_file, "trc", tmp_path / "x.trc")
    with pytest.raises(UserError, match="no person with id 3"):
        export_tracks(tracks_file, "c3d", tmp_path / "x.c3d", person=3)
    with pytest.raises(UserError, match="no 3D keypoints"):
        export_tracks(tracks_2d, "c3d", tmp_path / "x.c3d")
    with pytest.raises(UserError, match="drop --subset"):
        export_tracks(tracks_file, "openpose", tmp_path / "op", subset="coco17")
