"""Face from the 238 face keypoints: head rotation and ARKit blendshape weights in [0, 1].

Per frame, from one person's 2D keypoints (pixels):

1. Normalise: origin between the eye centres (each the middle of its lash-line corners),
   x along the line from the right eye to the left eye, y down, unit = the inter-ocular
   distance (IOD). The face's size and its roll in the image drop out.
2. Measure features in those units: eye opening / eye width, iris position in the eye,
   chin below the nose (jaw), the inner lips' gap, mouth width, mouth corners above the
   mouth centre, inner / outer / mean brow height above the eye.
3. Weight = clip((feature - neutral) / span, 0, 1) past a 5 % dead zone, signed per blendshape; the neutral is
   the median of the person's first `calibrate_seconds` (a neutral face is expected then;
   `recalibrate()` starts over); spans are fixed fractions of the neutral or of the IOD.

Head rotation (relative to the neutral head, rig axes: Y up, the face toward +Z, +X the
person's left): roll from the eye line, yaw and pitch from where the nose tip sits
against the eyes, with the nose tip NOSE_DEPTH IODs in front of the eye corners (a
weak-perspective head model): yaw = atan(du / D), pitch from v = v0 cos p + D sin p.

Names: "l_" / "left_" keypoints are the person's left, as ARKit's "Left" blendshapes are.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from functools import lru_cache
from typing import Optional, Sequence

import numpy as np
from scipy.spatial.transform import Rotation

from realtime.data import KEYPOINT_SCORE_THRESHOLD
from realtime.expressions import ARKIT_NAMES, VRM_PRESETS  # noqa: F401 (re-exported)
from realtime.expressions import clip_weight as _clip
from realtime.rig.robust import nanmedian

log = logging.getLogger(__name__)

NOSE_DEPTH = 0.6  # nose tip in front of the eye corners, in inter-ocular distances

# Spans: the feature change (from neutral) that makes a weight 1. Relative ones are fractions of the neutral value.
BLINK_SPAN, WIDE_SPAN = 0.8, 0.5        # of the neutral eye opening
LOOK_SIDE_SPAN, LOOK_UP_SPAN = 0.25, 0.15  # iris shift, eye widths
JAW_SPAN, LIPS_SPAN = 0.6, 0.5          # IODs
NARROW_SPAN, STRETCH_SPAN = 0.35, 0.3   # of the neutral mouth width
CORNER_SPAN = 0.15                      # IODs
BROW_SPAN = 0.15                        # IODs
DEAD_ZONE = 0.05                        # of a span: changes below it are jitter

_EYE = {side: dict(inner=f"{side}_inner_end_of_upper_lash_line", outer=f"{side}_outer_end_of_upper_lash_line",
                   upper=f"{side}_centerpoint_of_upper_eyelid_line", lower=f"{side}_centerpoint_of_lower_eyelid_line",
                   iris=f"{side}_center_of_iris")
        for side in ("l", "r")}
_BROW = {side: dict(inner=(f"upper_startpoint_of_{side}_eyebrow", f"lower_startpoint_of_{side}_eyebrow"),
                    outer=(f"end_of_{side}_eyebrow",),
                    all=tuple(f"{a}_{b}_of_{side}_eyebrow" for a, b in (("upper", "startpoint"), ("lower", "startpoint"),
                                                                          ("upper", "midpoint_1"), ("lower", "midpoint_1"),
                                                                          ("upper", "midpoint_2"), ("upper", "midpoint_3"),
                                                                          ("lower", "midpoint_2"), ("lower", "midpoint_3")))
                    + (f"end_of_{side}_eyebrow",))
         for side in ("l", "r")}
_MOUTH = dict(left="l_outer_corner_of_mouth", right="r_outer_corner_of_mouth", top="center_of_cupid_bow",
              bottom="center_of_lower_outer_lip", upper_inner="center_of_upper_inner_lip",
              lower_inner="center_of_lower_inner_lip")
_NOSE, _NOSE_BOTTOM, _CHIN = "tip_of_nose", "bottom_center_of_nose", "tip_of_chin"

FEATURES = ("open_l", "open_r", "iris_x_l", "iris_x_r", "iris_y_l", "iris_y_r", "jaw", "lip_gap", "width",
            "corner_l", "corner_r", "brow_inner", "brow_l", "brow_r", "brow_outer_l", "brow_outer_r",
            "nose_u", "nose_v", "roll")


@lru_cache(maxsize=1)
def face_point_names() -> tuple[str, ...]:
    """Every keypoint name the face reader uses."""
    names = [_NOSE, _NOSE_BOTTOM, _CHIN, *_MOUTH.values()]
    for side in ("l", "r"):
        names += list(_EYE[side].values()) + list(_BROW[side]["all"])
    return tuple(dict.fromkeys(names))


@dataclass(frozen=True)
class FaceState:
    """One face in one frame.

    weights:       (len(ARKIT_NAMES),) float in [0, 1], ARKIT_NAMES order.
    lips_open:     [0, 1], the inner lips apart (no ARKit name of its own; feeds mouthClose and the VRM vowels).
    head_rotation: (4,) quaternion x, y, z, w in rig axes, relative to the neutral head.
    calibrated:    False while the neutral is still being learned.
    """

    weights: np.ndarray
    lips_open: float
    head_rotation: np.ndarray
    calibrated: bool

    def weight(self, name: str) -> float:
        return float(self.weights[ARKIT_NAMES.index(name)])


def _weight(ratio: float) -> float:
    """A change / its span -> a weight in [0, 1], with a small dead zone so keypoint jitter on a
    neutral face reads 0 rather than flickering."""
    return _clip((ratio - DEAD_ZONE) / (1.0 - DEAD_ZONE))


def face_features(points: np.ndarray, index: dict[str, int], scores: Optional[np.ndarray] = None) -> Optional[np.ndarray]:
    """(len(FEATURES),) measurements of one face from its 2D keypoints (K, 2) px; None when an eye
    corner or the nose is unknown. Other unknown points leave their features NaN."""
    points = np.asarray(points, dtype=np.float64)
    if scores is not None:
        points = np.where((np.asarray(scores) >= KEYPOINT_SCORE_THRESHOLD)[:, None], points, np.nan)

    def at(name: str) -> np.ndarray:
        return points[index[name]]

    centre = {s: (at(_EYE[s]["inner"]) + at(_EYE[s]["outer"])) / 2 for s in ("l", "r")}
    axis = centre["l"] - centre["r"]
    iod = float(np.hypot(*axis))
    if not np.isfinite(iod) or iod < 1e-6 or not np.isfinite(at(_NOSE)).all():
        return None
    ux = axis / iod
    uy = np.array([-ux[1], ux[0]])  # image y is down, x to the right: (-x_y, x_x) points down the face
    origin = (centre["l"] + centre["r"]) / 2
    used = face_point_names()
    with np.errstate(all="ignore"):
        local = (points[[index[n] for n in used]] - origin) @ np.stack([ux, uy], axis=1) / iod  # all used points at once
    table = dict(zip(used, local))

    def uv(name: str) -> np.ndarray:
        return table[name]

    def mean_uv(names: Sequence[str]) -> np.ndarray:  # np.nanmean over the points, without its warnings machinery
        values = np.stack([table[n] for n in names])
        known = ~np.isnan(values)
        with np.errstate(all="ignore"):  # no point known: NaN
            return np.where(known, values, 0.0).sum(axis=0) / known.sum(axis=0)

    f = dict.fromkeys(FEATURES, np.nan)
    for s in ("l", "r"):
        e = _EYE[s]
        inner, outer, upper, lower, iris = (uv(e[k]) for k in ("inner", "outer", "upper", "lower", "iris"))
        width = float(np.hypot(*(outer - inner)))
        mid = (inner + outer) / 2
        f[f"open_{s}"] = (lower[1] - upper[1]) / width
        outward = 1.0 if s == "l" else -1.0  # the person's left is +u
        f[f"iris_x_{s}"] = outward * (iris[0] - mid[0]) / width
        f[f"iris_y_{s}"] = (iris[1] - (upper[1] + lower[1]) / 2) / width
        eye_v = mid[1]
        f[f"brow_{s}"] = eye_v - mean_uv(_BROW[s]["all"])[1]
        f[f"brow_outer_{s}"] = eye_v - uv(_BROW[s]["outer"][0])[1]
        f[f"brow_inner_{s}"] = eye_v - mean_uv(_BROW[s]["inner"])[1]
    f["brow_inner"] = (f.pop("brow_inner_l") + f.pop("brow_inner_r")) / 2
    f["jaw"] = uv(_CHIN)[1] - uv(_NOSE_BOTTOM)[1]
    f["lip_gap"] = uv(_MOUTH["lower_inner"])[1] - uv(_MOUTH["upper_inner"])[1]
    left, right = uv(_MOUTH["left"]), uv(_MOUTH["right"])
    f["width"] = float(np.hypot(*(left - right)))
    centre_v = (uv(_MOUTH["top"])[1] + uv(_MOUTH["bottom"])[1]) / 2
    f["corner_l"], f["corner_r"] = centre_v - left[1], centre_v - right[1]
    nose = uv(_NOSE)
    f["nose_u"], f["nose_v"] = nose
    f["roll"] = float(np.arctan2(axis[1], axis[0]))
    return np.array([f[name] for name in FEATURES], dtype=np.float64)


def blendshapes(features: np.ndarray, neutral: np.ndarray) -> tuple[np.ndarray, float]:
    """ARKit weights (ARKIT_NAMES order) and the lips-apart weight from features and the neutral ones."""
    f = dict(zip(FEATURES, features))
    n = dict(zip(FEATURES, neutral))
    w: dict[str, float] = {}
    for s, side in (("l", "Left"), ("r", "Right")):
        opening, rest = f[f"open_{s}"], max(n[f"open_{s}"], 1e-3)
        w[f"eyeBlink{side}"] = _weight((rest - opening) / (BLINK_SPAN * rest))
        w[f"eyeWide{side}"] = _weight((opening - rest) / (WIDE_SPAN * rest))
        side_shift = (f[f"iris_x_{s}"] - n[f"iris_x_{s}"]) / LOOK_SIDE_SPAN
        w[f"eyeLookOut{side}"], w[f"eyeLookIn{side}"] = _weight(side_shift), _weight(-side_shift)
        down = (f[f"iris_y_{s}"] - n[f"iris_y_{s}"]) / LOOK_UP_SPAN
        w[f"eyeLookDown{side}"], w[f"eyeLookUp{side}"] = _weight(down), _weight(-down)
        corner = (f[f"corner_{s}"] - n[f"corner_{s}"]) / CORNER_SPAN
        w[f"mouthSmile{side}"], w[f"mouthFrown{side}"] = _weight(corner), _weight(-corner)
        brow = (f[f"brow_{s}"] - n[f"brow_{s}"]) / BROW_SPAN
        w[f"browDown{side}"] = _weight(-brow)
        w[f"browOuterUp{side}"] = _weight((f[f"brow_outer_{s}"] - n[f"brow_outer_{s}"]) / BROW_SPAN)
    w["browInnerUp"] = _weight((f["brow_inner"] - n["brow_inner"]) / BROW_SPAN)
    w["jawOpen"] = _weight((f["jaw"] - n["jaw"]) / JAW_SPAN)
    lips = _weight((f["lip_gap"] - n["lip_gap"]) / LIPS_SPAN)
    w["mouthClose"] = _clip(w["jawOpen"] - lips)  # ARKit: lips together although the jaw is open
    width = max(n["width"], 1e-3)
    narrow = _weight((width - f["width"]) / (NARROW_SPAN * width))
    stretch = _weight((f["width"] - width) / (STRETCH_SPAN * width))
    w["mouthFunnel"] = narrow * lips  # rounded, lips apart ("oh")
    w["mouthPucker"] = narrow * (1.0 - lips)  # rounded, lips together (a kiss)
    w["mouthStretchLeft"] = w["mouthStretchRight"] = stretch
    weights = np.array([w[name] for name in ARKIT_NAMES], dtype=np.float64)
    return np.nan_to_num(weights, nan=0.0), float(np.nan_to_num(lips, nan=0.0))


def head_rotation(features: np.ndarray, neutral: np.ndarray) -> np.ndarray:
    """Quaternion x, y, z, w (rig axes) of the head relative to the neutral one, from the nose and the eye line."""
    f = dict(zip(FEATURES, features))
    n = dict(zip(FEATURES, neutral))
    yaw = np.arctan((f["nose_u"] - n["nose_u"]) / NOSE_DEPTH)
    radius, phase = np.hypot(n["nose_v"], NOSE_DEPTH), np.arctan2(NOSE_DEPTH, n["nose_v"])
    pitch = phase - np.arccos(np.clip(f["nose_v"] * np.cos(yaw) / radius, -1.0, 1.0))  # v grows as the IOD shrinks with yaw
    roll = -(f["roll"] - n["roll"])  # image y is down, rig Y up
    angles = np.nan_to_num(np.array([yaw, pitch, roll]), nan=0.0)
    return Rotation.from_euler("YXZ", angles).as_quat()


class FaceSolver:
    """Face state per frame for one person, with the neutral learned over its first seconds."""

    def __init__(self, keypoint_names: Sequence[str], *, calibrate_seconds: float = 2.0):
        self.index = {n: i for i, n in enumerate(keypoint_names)}
        missing = [n for n in face_point_names() if n not in self.index]
        if missing:
            raise ValueError(f"the keypoint set lacks face points the face reader needs: {missing[:3]}...")
        self.calibrate_seconds = calibrate_seconds
        self.reset()

    def reset(self) -> None:
        """Forget the person: the neutral is learned again."""
        self._samples: list[np.ndarray] = []
        self._start: Optional[float] = None
        self.neutral: Optional[np.ndarray] = None

    recalibrate = reset

    def update(self, timestamp: float, keypoints: Optional[np.ndarray],
               scores: Optional[np.ndarray] = None) -> Optional[FaceState]:
        """keypoints (K, 2) px (NaN unknown), scores (K,) or None. None when the face cannot be read."""
        if keypoints is None:
            return None
        with np.errstate(all="ignore"):
            features = face_features(keypoints, self.index, scores)
        if features is None:
            return None
        calibrated = self.neutral is not None
        if not calibrated:
            if self._start is None:
                self._start = timestamp
            self._samples.append(features)
            neutral = nanmedian(np.stack(self._samples))
            if timestamp - self._start >= self.calibrate_seconds:
                self.neutral, self._samples = neutral, []
                log.info("face neutral learned from %.1f s", timestamp - self._start)
        else:
            neutral = self.neutral
        with np.errstate(all="ignore"):  # unknown points: NaN features, weight 0
            weights, lips = blendshapes(features, neutral)
            rotation = head_rotation(features, neutral)
        return FaceState(weights, lips, rotation, calibrated)
