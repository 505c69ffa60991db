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
# https://docs.vrcft.io/docs/tutorial-avatars/tutorial-avatars-extras/compatibility/arkit. Each key: its value
# from the ARKit weights (w: name -> weight), in [0, 1]. VRCFT's signed parameters are not used: its eye gaze
# (EyeLeftX, ...) goes to VRChat's own eye-tracking addresses instead (`eye_look`), and the combined brow and
# smile/frown keys repeat what their unsigned parts send. EyeLid: 0 closed, 0.75 open, 1 wide.
def _eye_lid(w: dict, side: str) -> float:
    return 0.75 * (1.0 - w[f"eyeBlink{side}"]) + 0.25 * w[f"eyeWide{side}"]


_UNIFIED = {  # key: value from the ARKit weights
    "EyeLidLeft": lambda w: _eye_lid(w, "Left"),
    "EyeLidRight": lambda w: _eye_lid(w, "Right"),
    "EyeLid": lambda w: 0.5 * (_eye_lid(w, "Left") + _eye_lid(w, "Right")),
    "BrowInnerUp": lambda w: w["browInnerUp"],
    "BrowOuterUpLeft": lambda w: w["browOuterUpLeft"],
    "BrowOuterUpRight": lambda w: w["browOuterUpRight"],
    "BrowDownLeft": lambda w: w["browDownLeft"],
    "BrowDownRight": lambda w: w["browDownRight"],
    "JawOpen": lambda w: w["jawOpen"],
    "MouthClosed": lambda w: w["mouthClose"],
    "LipFunnel": lambda w: w["mouthFunnel"],
    "LipPucker": lambda w: w["mouthPucker"],
    "MouthSmileLeft": lambda w: w["mouthSmileLeft"],
    "MouthSmileRight": lambda w: w["mouthSmileRight"],
    "MouthFrownLeft": lambda w: w["mouthFrownLeft"],
    "MouthFrownRight": lambda w: w["mouthFrownRight"],
    "MouthStretchLeft": lambda w: w["mouthStretchLeft"],
    "MouthStretchRight": lambda w: w["mouthStretchRight"],
}
UNIFIED_KEYS = tuple(_UNIFIED)
# VRChat's eye tracking over OSC (https://docs.vrchat.com/docs/osc-eye-tracking): how closed the eyes are in [0, 1],
# and where both eyes look as pitch (+ down) and yaw (+ the person's right) in degrees, Unity's rotations about x
# and y. An ARKit eye-look weight of 1 is taken as 45 degrees (VRCFT's normalisation of its gaze).
EYE_LOOK_DEGREES = 45.0


def eye_look(weights: np.ndarray) -> np.ndarray:
    """(3,) VRChat's eye tracking from ARKit weights (ARKIT_NAMES order, NaN -> 0): EyesClosedAmount in [0, 1],
    then CenterPitchYaw: pitch and yaw in degrees, each within +-EYE_LOOK_DEGREES."""
    w = {name: clip_weight(v) for name, v in zip(ARKIT_NAMES, np.asarray(weights, np.float64))}
    closed = 0.5 * (w["eyeBlinkLeft"] + w["eyeBlinkRight"])
    down = 0.5 * (w["eyeLookDownLeft"] - w["eyeLookUpLeft"] + w["eyeLookDownRight"] - w["eyeLookUpRight"])
    right = 0.5 * (w["eyeLookInLeft"] - w["eyeLookOutLeft"] + w["eyeLookOutRight"] - w["eyeLookInRight"])
    return np.array([closed, EYE_LOOK_DEGREES * down, EYE_LOOK_DEGREES * right])


def unified_expressions(weights: np.ndarray) -> np.ndarray:
    """(len(UNIFIED_KEYS),) Unified Expressions values in [0, 1] from ARKit weights (ARKIT_NAMES order): each
    weight clipped to [0, 1] first (NaN -> 0)."""
    w = {name: clip_weight(v) for name, v in zip(ARKIT_NAMES, np.asarray(weights, np.float64))}
    return np.clip([value(w) for value in _UNIFIED.values()], 0.0, 1.0)
