"""The face's vocabulary: ARKit blendshape names (the order of `Person.face`), the VRM 1.0
expression presets, and the presets from the ARKit weights. Pure data and arithmetic, shared
by the face stage (`realtime.rig.face`) and the live senders (`realtime.sinks.osc`), which
only encode what a frame holds.
"""

from __future__ import annotations

import numpy as np

ARKIT_NAMES = (
    "eyeBlinkLeft", "eyeBlinkRight", "eyeWideLeft", "eyeWideRight",
    "eyeLookUpLeft", "eyeLookUpRight", "eyeLookDownLeft", "eyeLookDownRight",
    "eyeLookInLeft", "eyeLookInRight", "eyeLookOutLeft", "eyeLookOutRight",
    "jawOpen", "mouthClose", "mouthFunnel", "mouthPucker",
    "mouthSmileLeft", "mouthSmileRight", "mouthFrownLeft", "mouthFrownRight",
    "mouthStretchLeft", "mouthStretchRight",
    "browInnerUp", "browDownLeft", "browDownRight", "browOuterUpLeft", "browOuterUpRight",
)
VRM_PRESETS = ("blink", "blinkLeft", "blinkRight", "aa", "ih", "ou", "ee", "oh", "happy", "angry", "sad", "surprised", "relaxed")


def clip_weight(value: float) -> float:
    """A weight clipped to [0, 1]; NaN -> 0."""
    value = float(value)
    return value if 0.0 <= value <= 1.0 else (0.0 if not value > 0.0 else 1.0)


def vrm_presets(weights: np.ndarray, lips_open: float) -> dict[str, float]:
    """VRM 1.0 expression presets from ARKit weights (ARKIT_NAMES order) and the lips-apart weight."""
    w = {name: float(v) for name, v in zip(ARKIT_NAMES, weights)}
    blink_l, blink_r = w["eyeBlinkLeft"], w["eyeBlinkRight"]
    stretch = (w["mouthStretchLeft"] + w["mouthStretchRight"]) / 2
    smile = (w["mouthSmileLeft"] + w["mouthSmileRight"]) / 2
    presets = {
        "blink": min(blink_l, blink_r), "blinkLeft": blink_l, "blinkRight": blink_r,
        "aa": lips_open * (1.0 - w["mouthFunnel"] - w["mouthPucker"]) * (1.0 - stretch),
        "ih": lips_open * stretch,
        "ou": w["mouthPucker"],
        "ee": (1.0 - lips_open) * stretch,
        "oh": w["mouthFunnel"],
        "happy": smile,
        "angry": (w["browDownLeft"] + w["browDownRight"]) / 2,
        "sad": (w["mouthFrownLeft"] + w["mouthFrownRight"]) / 2,
        "surprised": min(1.0, ((w["eyeWideLeft"] + w["eyeWideRight"]) / 2 + w["browInnerUp"]) / 2 + 0.5 * w["jawOpen"]),
        "relaxed": smile * (blink_l + blink_r) / 2,
    }
    return {name: clip_weight(presets[name]) for name in VRM_PRESETS}


def blend_values(weights: np.ndarray, lips_open: float) -> np.ndarray:
    """The /VMC/Ext/Blend/Val weights in `BLEND_NAMES` order: every ARKit weight, then the VRM presets."""
    return np.concatenate([np.asarray(weights, np.float64), list(vrm_presets(weights, lips_open).values())])


BLEND_NAMES = ARKIT_NAMES + VRM_PRESETS
