import numpy as np
import pytest

from realtime.data import flip_indices, keypoint_groups, keypoint_names, seg_palette
from realtime.frames import DenseMaps, Frame, Person


def test_frame_replace_keeps_original():
    img = np.zeros((4, 6, 3), np.uint8)
    f = Frame(index=3, timestamp=0.1, image=img)
    p = Person(box=np.array([0, 0, 2, 2], np.float32), keypoints=np.zeros((308, 2), np.float32),
               keypoint_scores=np.ones(308, np.float32))
    g = f.with_stage_time("detect", 0.01, people=(p,), boxes_from="detector")
    assert f.people == () and f.stage_seconds == {}
    assert g.people[0] is p and g.stage_seconds == {"detect": 0.01} and (g.width, g.height) == (6, 4)
    assert not p.smoothed and p.best_keypoints is p.keypoints
    q = p.replace(keypoints_smoothed=np.ones((308, 2), np.float32))
    assert q.smoothed and q.best_keypoints is q.keypoints_smoothed
    assert DenseMaps().seg is None


def test_frame_rejects_wrong_image():
    with pytest.raises(ValueError, match="uint8 RGB"):
        Frame(index=0, timestamp=0.0, image=np.zeros((4, 6), np.uint8))
    with pytest.raises(ValueError, match="shape"):
        Person(box=np.zeros(3))


# sha256 of the official keypoints308.json / seg29.json (the reference set, made by the
# official metadata parser); the package data must be those files, byte for byte.
OFFICIAL_TABLES = {
    "keypoints308.json": "bee9b5c4607533453473583cf8e7e81870b321db706c02815508d9757bf7524d",
    "seg29.json": "beb1766e0552459b67a45d88704d000e1c6e0888178630796d83c4f6075dfd3b",
}


def test_tables_match_reference():
    import hashlib
    import json
    from importlib.resources import files

    for name, digest in OFFICIAL_TABLES.items():
        assert hashlib.sha256(files("realtime.data").joinpath(name).read_bytes()).hexdigest() == digest, name
    ref = json.loads(files("realtime.data").joinpath("keypoints308.json").read_text())
    assert keypoint_names() == [k["name"] for k in ref["keypoints"]]
    fi = flip_indices()
    assert len(fi) == 308 and (fi[fi] == np.arange(308)).all()
    assert sum(len(v) for v in keypoint_groups().values()) == 308
    assert seg_palette().shape == (29, 3)
