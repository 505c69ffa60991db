"""The face's vocabulary: ARKit blendshape names (the order of `Person.face`), the VRM 1.0
expression presets and VRCFaceTracking's Unified Expressions keys, both from the ARKit weights.
Pure data and arithmetic, shared by the face stage (`realtime.rig.face`) and the live senders
(`realtime.sinks.osc`, `realtime.sinks.vrchat`), which only encode what a frame holds.
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


# VRCFaceTracking's Unified Expressions parameters ("v2/<key>", the keys VRChat's OSC face tracking takes):
# https://docs.vrcft.io/docs/tutorial-avatars/tutorial-avatars-extras/parameters, and its ARKit table
# https://docs.vrcft.io/docs/tutorial-avatars/tutorial-avatars-extras/compatibility/arkit. Each key: its
# value from the ARKit weights (w: name -> weight), and whether it is signed ([-1, 1]) or not ([0, 1]).
# Eye look: 1 = the ARKit weight's full look (VRCFT normalises 45 degrees to 1); +X is the person's
# right, +Y up. EyeLid: 0 closed, 0.75 open, 1 wide.
def _eye_lid(w: dict, side: str) -> float:
    return 0.75 * (1.0 - w[f"eyeBlink{side}"]) + 0.25 * w[f"eyeWide{side}"]


def _brow(w: dict, side: str) -> float:  # up positive, down negative
    return 0.5 * (w["browInnerUp"] + w[f"browOuterUp{side}"]) - w[f"browDown{side}"]


_UNIFIED = {  # key: (signed, value from the ARKit weights)
    "EyeLeftX": (True, lambda w: w["eyeLookInLeft"] - w["eyeLookOutLeft"]),  # the left eye in: towards the right
    "EyeLeftY": (True, lambda w: w["eyeLookUpLeft"] - w["eyeLookDownLeft"]),
    "EyeRightX": (True, lambda w: w["eyeLookOutRight"] - w["eyeLookInRight"]),
    "EyeRightY": (True, lambda w: w["eyeLookUpRight"] - w["eyeLookDownRight"]),
    "EyeX": (True, lambda w: 0.5 * (w["eyeLookInLeft"] - w["eyeLookOutLeft"] + w["eyeLookOutRight"] - w["eyeLookInRight"])),
    "EyeY": (True, lambda w: 0.5 * (w["eyeLookUpLeft"] - w["eyeLookDownLeft"] + w["eyeLookUpRight"] - w["eyeLookDownRight"])),
    "EyeLidLeft": (False, lambda w: _eye_lid(w, "Left")),
    "EyeLidRight": (False, lambda w: _eye_lid(w, "Right")),
    "EyeLid": (False, lambda w: 0.5 * (_eye_lid(w, "Left") + _eye_lid(w, "Right"))),
    "BrowInnerUp": (False, lambda w: w["browInnerUp"]),
    "BrowOuterUpLeft": (False, lambda w: w["browOuterUpLeft"]),
    "BrowOuterUpRight": (False, lambda w: w["browOuterUpRight"]),
    "BrowDownLeft": (False, lambda w: w["browDownLeft"]),
    "BrowDownRight": (False, lambda w: w["browDownRight"]),
    "BrowExpressionLeft": (True, lambda w: _brow(w, "Left")),
    "BrowExpressionRight": (True, lambda w: _brow(w, "Right")),
    "JawOpen": (False, lambda w: w["jawOpen"]),
    "MouthClosed": (False, lambda w: w["mouthClose"]),
    "LipFunnel": (False, lambda w: w["mouthFunnel"]),
    "LipPucker": (False, lambda w: w["mouthPucker"]),
    "MouthSmileLeft": (False, lambda w: w["mouthSmileLeft"]),
    "MouthSmileRight": (False, lambda w: w["mouthSmileRight"]),
    "MouthFrownLeft": (False, lambda w: w["mouthFrownLeft"]),
    "MouthFrownRight": (False, lambda w: w["mouthFrownRight"]),
    "MouthStretchLeft": (False, lambda w: w["mouthStretchLeft"]),
    "MouthStretchRight": (False, lambda w: w["mouthStretchRight"]),
    "SmileFrownLeft": (True, lambda w: w["mouthSmileLeft"] - w["mouthFrownLeft"]),
    "SmileFrownRight": (True, lambda w: w["mouthSmileRight"] - w["mouthFrownRight"]),
}
UNIFIED_KEYS = tuple(_UNIFIED)
UNIFIED_SIGNED = frozenset(key for key, (signed, _) in _UNIFIED.items() if signed)  # in [-1, 1]; the rest in [0, 1]


def unified_expressions(weights: np.ndarray) -> np.ndarray:
    """(len(UNIFIED_KEYS),) Unified Expressions values from ARKit weights (ARKIT_NAMES order): each weight
    clipped to [0, 1] first (NaN -> 0), each value to [-1, 1] (UNIFIED_SIGNED) or [0, 1]."""
    w = {name: clip_weight(v) for name, v in zip(ARKIT_NAMES, np.asarray(weights, np.float64))}
    out = np.array([value(w) for _, value in _UNIFIED.values()])
    low = np.array([-1.0 if key in UNIFIED_SIGNED else 0.0 for key in UNIFIED_KEYS])
    return np.clip(out, low, 1.0)
