"""Package data: the 308-keypoint table, the 29 body-part classes and the keypoint score threshold.

Both files come unchanged from the official metadata (see
`tests/reference/README.md`); these helpers only read them.
"""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources

import numpy as np

# A keypoint whose heatmap score is below this is not trusted: not drawn, not measured by the filters and
# the tracker, not lifted to 3D, not read by the face rig. The official demo's `--kpt-thr` default
# (sapiens pose `demo/vis_pose.py`). Defined here, in the foundation layer, so every layer uses the same one.
KEYPOINT_SCORE_THRESHOLD = 0.3


@lru_cache(maxsize=None)
def keypoint_table() -> dict:
    """The parsed `keypoints308.json` (names, colours, flip indices, links, sigmas, groups)."""
    return json.loads(resources.files(__name__).joinpath("keypoints308.json").read_text())


@lru_cache(maxsize=None)
def seg_table() -> dict:
    """The parsed `seg29.json` (class names and the RGB palette)."""
    return json.loads(resources.files(__name__).joinpath("seg29.json").read_text())


def keypoint_names() -> list[str]:
    return [k["name"] for k in keypoint_table()["keypoints"]]


def flip_indices() -> np.ndarray:
    """(308,) int64: index k takes the channel of keypoint k's mirror partner."""
    return np.asarray(keypoint_table()["flip_indices"], dtype=np.int64)


def keypoint_sigmas() -> np.ndarray:
    """(308,) float32 OKS sigmas."""
    return np.asarray(keypoint_table()["sigmas"], dtype=np.float32)


def keypoint_groups() -> dict[str, np.ndarray]:
    """Region name (body, foot, left_hand, right_hand, extra, face) -> keypoint indices."""
    return {name: np.asarray(g["indices"], dtype=np.int64) for name, g in keypoint_table()["groups"].items()}


def seg_palette() -> np.ndarray:
    """(29, 3) uint8 RGB palette, class order."""
    return np.asarray(seg_table()["palette_rgb"], dtype=np.uint8)


def seg_class_names() -> list[str]:
    return list(seg_table()["names"])
