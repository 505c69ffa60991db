"""Plausible synthetic people and dense maps for benchmarks, screenshots and demos.

This is NOT model output: there are no trained weights in this repository's tests.
`synthetic_person` places the 308 keypoints of a standing person in a box (body
from a template, hands fanned out from the wrists, face points clustered by
facial region from their names); `synthetic_dense` rasterises body-part labels
from those keypoints and derives a depth map (metres) and camera-space normals
from a simple rounded-body shape. Good enough to exercise every drawing path
with realistic sizes, never to judge a model.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Optional, Sequence

import cv2
import numpy as np

from realtime.data import keypoint_names, seg_class_names
from realtime.frames import DenseMaps, Person

# (u, v): u = horizontal offset from the body axis, v = down from the head top, both in
# units of the person's height; the person faces the camera (their left = image right).
_BODY = {
    "nose": (0.0, 0.085), "left_eye": (0.018, 0.07), "right_eye": (-0.018, 0.07),
    "left_ear": (0.045, 0.075), "right_ear": (-0.045, 0.075),
    "left_shoulder": (0.11, 0.19), "right_shoulder": (-0.11, 0.19),
    "left_elbow": (0.15, 0.35), "right_elbow": (-0.15, 0.35),
    "left_wrist": (0.17, 0.48), "right_wrist": (-0.17, 0.48),
    "left_hip": (0.07, 0.52), "right_hip": (-0.07, 0.52),
    "left_knee": (0.075, 0.73), "right_knee": (-0.075, 0.73),
    "left_ankle": (0.075, 0.94), "right_ankle": (-0.075, 0.94),
    "left_big_toe": (0.07, 0.99), "left_small_toe": (0.1, 0.985), "left_heel": (0.075, 0.96),
    "right_big_toe": (-0.07, 0.99), "right_small_toe": (-0.1, 0.985), "right_heel": (-0.075, 0.96),
    "left_olecranon": (0.16, 0.35), "right_olecranon": (-0.16, 0.35),
    "left_cubital_fossa": (0.14, 0.35), "right_cubital_fossa": (-0.14, 0.35),
    "left_acromion": (0.1, 0.18), "right_acromion": (-0.1, 0.18), "neck": (0.0, 0.16),
}
# Face regions: name pattern -> (u, v) centre relative to the nose, and (su, sv) spread.
_FACE_REGIONS = [
    (r"eyebrow", (0.02, -0.028), (0.012, 0.003)),
    (r"lash|eyelid|crease|iris|pupil", (0.02, -0.015), (0.009, 0.004)),
    (r"helix|tragus|crus|concha|lobe|antihelix|between", (0.045, -0.01), (0.005, 0.014)),
    (r"lip|mouth|cupid", (0.0, 0.022), (0.014, 0.005)),
    (r"chin|labiomental", (0.0, 0.042), (0.004, 0.006)),
    (r"nose|nostril|glabella", (0.0, -0.01), (0.006, 0.014)),
]
_FINGERS = ("thumb", "forefinger", "middle_finger", "ring_finger", "pinky_finger")
_JOINTS = ("third_joint", "2", "3", "4")  # from the knuckle to the tip


@lru_cache(maxsize=None)
def template() -> np.ndarray:
    """(308, 2) float64 (u, v) template of a standing person, in units of body height."""
    names = keypoint_names()
    rng = np.random.default_rng(308)
    uv = np.zeros((len(names), 2))
    for k, name in enumerate(names):
        if name in _BODY:
            uv[k] = _BODY[name]
            continue
        hand = re.match(r"(left|right)_(\w+?)(4|3|2|_third_joint)$", name)
        if hand:
            side = 1.0 if hand.group(1) == "left" else -1.0
            finger = _FINGERS.index(hand.group(2))
            joint = _JOINTS.index(hand.group(3).lstrip("_"))
            angle = np.deg2rad(-35 + 17 * finger)  # fan the fingers out below the wrist
            reach = 0.03 + 0.014 * joint
            uv[k] = (side * (0.17 + 0.25 * reach * np.sin(-angle) + 0.01), 0.48 + reach * np.cos(angle))
            continue
        side = 1.0 if re.match(r"l_|.*_l_|.*of_l_", name) else -1.0 if re.match(r"r_|.*_r_|.*of_r_", name) else 0.0
        for pattern, (cu, cv), (su, sv) in _FACE_REGIONS:
            if re.search(pattern, name):
                uv[k] = (side * cu + rng.normal(0, su), 0.085 + cv + rng.normal(0, sv))
                break
        else:
            raise ValueError(f"no synthetic position for keypoint {name!r}")
    return uv


def synthetic_person(
    box: Sequence[float],
    track_id: Optional[int] = None,
    rng: Optional[np.random.Generator] = None,
    hidden_fraction: float = 0.05,
) -> Person:
    """A `Person` with 308 plausible keypoints filling `box` (xyxy px).

    Scores are uniform in [0.5, 1] except a random `hidden_fraction` below 0.3.
    """
    rng = rng if rng is not None else np.random.default_rng(0)
    box = np.asarray(box, dtype=np.float32)
    height = float(box[3] - box[1])
    uv = template()
    xy = np.stack([(box[0] + box[2]) / 2 + uv[:, 0] * height, box[1] + uv[:, 1] * height], axis=1)
    xy += rng.normal(0, 0.003 * height, size=xy.shape)  # no two people exactly alike
    scores = rng.uniform(0.5, 1.0, size=len(xy))
    scores[rng.random(len(xy)) < hidden_fraction] = 0.1
    return Person(
        box=box, box_score=float(rng.uniform(0.6, 0.99)), track_id=track_id,
        keypoints=xy.astype(np.float32), keypoint_scores=scores.astype(np.float32),
    )


# Body-part segments: (from keypoint, to keypoint, class name, width in body heights).
_SEGMENTS = [
    ("left_hip", "left_knee", "Left_Upper_Leg", 0.075), ("right_hip", "right_knee", "Right_Upper_Leg", 0.075),
    ("left_knee", "left_ankle", "Left_Lower_Leg", 0.06), ("right_knee", "right_ankle", "Right_Lower_Leg", 0.06),
    ("left_ankle", "left_small_toe", "Left_Shoe", 0.045), ("right_ankle", "right_small_toe", "Right_Shoe", 0.045),
    ("left_shoulder", "left_elbow", "Left_Upper_Arm", 0.05), ("right_shoulder", "right_elbow", "Right_Upper_Arm", 0.05),
    ("left_elbow", "left_wrist", "Left_Lower_Arm", 0.04), ("right_elbow", "right_wrist", "Right_Lower_Arm", 0.04),
    ("left_wrist", "left_middle_finger3", "Left_Hand", 0.035),
    ("right_wrist", "right_middle_finger3", "Right_Hand", 0.035),
    ("neck", "nose", "Face_Neck", 0.06),
]


def synthetic_dense(image_hw: tuple[int, int], people: Sequence[Person], map_scale: float = 0.5) -> DenseMaps:
    """Body-part labels, depth (m) and normals rasterised from `people`'s keypoints.

    Maps have shape (round(H * map_scale), round(W * map_scale)), like a pipeline that
    runs dense tasks at a lower resolution. A person's distance follows from their box
    height (1.7 m tall, focal length = image width); far people are painted first.
    """
    h, w = round(image_hw[0] * map_scale), round(image_hw[1] * map_scale)
    focal = image_hw[1] * map_scale
    classes = {name: i for i, name in enumerate(seg_class_names())}
    index = {name: i for i, name in enumerate(keypoint_names())}
    seg = np.zeros((h, w), np.uint8)
    depth = np.full((h, w), np.nan, np.float32)
    distance = [1.7 * image_hw[1] / max(float(p.box[3] - p.box[1]), 1.0) for p in people]
    for order in np.argsort(distance)[::-1]:
        person, z0 = people[order], distance[order]
        height = float(person.box[3] - person.box[1]) * map_scale
        # Rasterise in a window around the person only (cheap for small people).
        margin = 0.15 * height
        x0, y0 = (max(0, int(v * map_scale - margin)) for v in person.box[:2])
        x1, y1 = min(w, int(person.box[2] * map_scale + margin)), min(h, int(person.box[3] * map_scale + margin))
        if x1 <= x0 or y1 <= y0:
            continue
        xy = person.best_keypoints * map_scale - (x0, y0)
        mask = np.zeros((y1 - y0, x1 - x0), np.uint8)
        label = np.zeros_like(mask)
        pt = lambda name, xy=xy: tuple(int(v) for v in np.round(xy[index[name]]))  # noqa: E731
        torso = np.array([pt("left_shoulder"), pt("right_shoulder"), pt("right_hip"), pt("left_hip")], np.int32)
        cv2.fillConvexPoly(label, torso, classes["Upper_Clothing"])
        cv2.fillConvexPoly(mask, torso, 1)
        for a, b, name, width in _SEGMENTS:
            thickness = max(1, round(width * height))
            cv2.line(label, pt(a), pt(b), classes[name], thickness)
            cv2.line(mask, pt(a), pt(b), 1, thickness)
        head = pt("nose")
        axes = (max(1, round(0.05 * height)), max(1, round(0.065 * height)))
        cv2.ellipse(label, head, axes, 0, 0, 360, classes["Face_Neck"], -1)
        cv2.ellipse(label, (head[0], head[1] - axes[1] // 3), axes, 0, 180, 360, classes["Hair"], -1)
        cv2.ellipse(mask, head, axes, 0, 0, 360, 1, -1)
        # Rounded body: points deeper inside the silhouette are nearer the camera.
        inside = cv2.distanceTransform(mask, cv2.DIST_L2, 5)
        bulge = 0.12 * np.sqrt(inside / max(float(inside.max()), 1e-6))
        on = mask > 0
        seg[y0:y1, x0:x1][on] = label[on]
        depth[y0:y1, x0:x1][on] = (z0 - bulge[on]).astype(np.float32)
    return DenseMaps(seg=seg, depth=depth, normal=normals_from_depth(depth, focal), computed_on=None)


def normals_from_depth(depth: np.ndarray, focal: float) -> np.ndarray:
    """(h, w, 3) float32 unit normals (camera space, facing the camera) of a depth map (m).

    NaN where the depth is NaN; `focal` in pixels of the depth map.
    """
    filled = np.where(np.isfinite(depth), depth, np.nanmax(depth) if np.isfinite(depth).any() else 1.0)
    dz_dy, dz_dx = np.gradient(filled.astype(np.float64))
    # Pixel steps are z / focal metres wide: slope in metres per metre.
    scale = focal / np.maximum(filled, 1e-3)
    n = np.stack([dz_dx * scale, dz_dy * scale, -np.ones_like(filled)], axis=-1)
    n /= np.linalg.norm(n, axis=-1, keepdims=True)
    n[~np.isfinite(depth)] = np.nan
    return n.astype(np.float32)
