"""A synthetic face with known expression causes (eye opening, jaw, lips, mouth width,
mouth corners, brows, gaze) and head rotation, as the 238 Sapiens face keypoints.

Head frame: metres, x = the person's left, y up, z towards the camera; the inter-ocular
distance is 63 mm and the nose tip stands `realtime.rig.face.NOSE_DEPTH` IODs in front of
the eye corners. Points the face reader does not use are placed at fixed spots on the
face so every one of the 308 keypoints is known.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.spatial.transform import Rotation

from realtime.data import keypoint_table
from realtime.rig.face import NOSE_DEPTH

NAMES = [k["name"] for k in keypoint_table()["keypoints"]]
_INDEX = {name: i for i, name in enumerate(NAMES)}
FACE = keypoint_table()["groups"]["face"]["names"]
IOD = 0.063
FOCAL, CENTRE = 900.0, np.array([640.0, 360.0])


@dataclass(frozen=True)
class FaceParams:
    """Causes, in metres unless said: 0 everywhere is the neutral face."""

    eye_open_l: float = 0.010
    eye_open_r: float = 0.010
    jaw: float = 0.0            # chin drop
    lips: float = 0.0           # inner lips apart
    mouth_width: float = 0.050
    corner_l: float = 0.0       # mouth corner raise
    corner_r: float = 0.0
    brow_inner: float = 0.0     # inner brow raise
    brow_l: float = 0.0         # whole brow raise
    brow_r: float = 0.0
    brow_outer_l: float = 0.0   # outer end raise (on top of brow_l)
    brow_outer_r: float = 0.0
    gaze_x: float = 0.0         # iris shift towards the person's left, metres
    gaze_y: float = 0.0         # iris shift up
    yaw: float = 0.0            # head, degrees (YXZ, rig axes)
    pitch: float = 0.0
    roll: float = 0.0


def face_points_head(p: FaceParams) -> dict[str, np.ndarray]:
    """Named face points in the head frame."""
    pts: dict[str, tuple] = {}
    for side, sx in (("l", 1.0), ("r", -1.0)):
        cx = sx * IOD / 2
        opening = p.eye_open_l if side == "l" else p.eye_open_r
        pts[f"{side}_inner_end_of_upper_lash_line"] = (cx - sx * 0.015, 0.0, 0.0)
        pts[f"{side}_outer_end_of_upper_lash_line"] = (cx + sx * 0.015, 0.0, 0.0)
        pts[f"{side}_centerpoint_of_upper_eyelid_line"] = (cx, opening / 2, 0.004)
        pts[f"{side}_centerpoint_of_lower_eyelid_line"] = (cx, -opening / 2, 0.004)
        pts[f"{side}_center_of_iris"] = (cx + p.gaze_x, p.gaze_y, 0.005)
        raise_ = p.brow_l if side == "l" else p.brow_r
        outer = p.brow_outer_l if side == "l" else p.brow_outer_r
        for i, t in enumerate(np.linspace(0.0, 1.0, 5)):
            x = cx + sx * (-0.017 + 0.035 * t)
            y = 0.024 + raise_ + p.brow_inner * (1 - t) + outer * t
            pts[("upper_startpoint", "upper_midpoint_1", "upper_midpoint_2", "upper_midpoint_3", "end")[i] + f"_of_{side}_eyebrow"
                if i < 4 else f"end_of_{side}_eyebrow"] = (x, y + 0.003, 0.008)
            if i < 4:
                pts[("lower_startpoint", "lower_midpoint_1", "lower_midpoint_2",
                     "lower_midpoint_3")[i] + f"_of_{side}_eyebrow"] = (x, y - 0.003, 0.008)
    pts["upper_startpoint_of_l_eyebrow"] = pts.pop("upper_startpoint_of_l_eyebrow")
    pts["tip_of_nose"] = (0.0, -0.035, NOSE_DEPTH * IOD)
    pts["bottom_center_of_nose"] = (0.0, -0.045, 0.02)
    mouth_y = -0.07
    pts["l_outer_corner_of_mouth"] = (p.mouth_width / 2, mouth_y + p.corner_l - p.jaw / 3, 0.008)
    pts["r_outer_corner_of_mouth"] = (-p.mouth_width / 2, mouth_y + p.corner_r - p.jaw / 3, 0.008)
    pts["center_of_cupid_bow"] = (0.0, mouth_y + 0.008, 0.016)
    pts["center_of_upper_inner_lip"] = (0.0, mouth_y + 0.001, 0.013)
    pts["center_of_lower_inner_lip"] = (0.0, mouth_y - 0.001 - p.lips - p.jaw * 0.5, 0.013)
    pts["center_of_lower_outer_lip"] = (0.0, mouth_y - 0.009 - p.lips - p.jaw * 0.5, 0.014)
    pts["tip_of_chin"] = (0.0, -0.115 - p.jaw, 0.006)
    out = {name: np.array(v, dtype=np.float64) for name, v in pts.items()}
    for name in FACE:
        if name not in out:
            out[name] = _OTHER[name]
    return out


_OTHER = {name: np.random.default_rng(7 + i).uniform([-0.07, -0.11, -0.05], [0.07, 0.04, 0.02])  # fixed spots on the face
          for i, name in enumerate(FACE)}


def head_matrix(p: FaceParams) -> np.ndarray:
    return Rotation.from_euler("YXZ", [p.yaw, p.pitch, p.roll], degrees=True).as_matrix()


def face_camera_points(p: FaceParams, head_position=(0.0, -0.1, 0.6)) -> dict[str, np.ndarray]:
    """Named face points in the camera frame (x right, y down, z forward), the face turned to the camera."""
    points = face_points_head(p)
    local = np.stack(list(points.values()))
    cam = local @ head_matrix(p).T * [1.0, -1.0, -1.0] + np.asarray(head_position)  # head / rig axes -> camera
    return dict(zip(points, cam))


def project(points: np.ndarray) -> np.ndarray:
    points = np.asarray(points, dtype=np.float64)
    return FOCAL * points[..., :2] / points[..., 2:] + CENTRE


def face_keypoints(p: FaceParams, head_position=(0.0, -0.1, 0.6)) -> tuple[np.ndarray, np.ndarray]:
    """(308, 2) px and (308, 3) camera metres with the face points set, NaN elsewhere."""
    cam = face_camera_points(p, head_position)
    points3d = np.full((len(NAMES), 3), np.nan)
    for name, v in cam.items():
        points3d[_INDEX[name]] = v
    return project(points3d), points3d
