"""The stages of a run, one module each, every one a plain object with `process(frame) -> frame`
and `close()`; the pipeline (`realtime.pipeline`) owns the threads.

    detect -> infer -> collect -> smooth -> face -> egomotion -> ground -> world -> motion -> live -> render -> write

`detect` person boxes; `infer`/`collect` launch a frame on the device and wait for it;
`smooth` identities and the live 2D filter; `face` expressions and head rotation; `egomotion` the
camera's pose in the odometry frame (`Frame.odometry`, `--camera`); `ground` 3D keypoints at pose rate
and foot contacts (planted feet held in the world when the camera moves), and the floor's up from the
pointmap's background (`Frame.floor_up`); `world` the camera's pose in a world frame (`Frame.camera`;
its up `Frame.floor_up` when measured), heights, and world contacts once the camera moves;
`motion` the live 3D filter, foot locking and the skeleton solve (`Person.bones`); `live` the
avatar's senders (VMC, OSC), before anything is drawn or written; `render` the picture; `write`
the sinks (tracks, video, viewer, progress).
`realtime.rig` is the math they call.
"""

import importlib

# Each name loads its stage's module on first use (PEP 562): `sapiens-rt stream` replays through the
# live and motion stages alone and so does not import the infer stage's PyTorch (seconds at start).
_MODULE_OF = {
    "DetectStage": "detect", "Feedback": "detect", "EgomotionStage": "egomotion", "FaceStage": "face",
    "GroundStage": "ground", "CollectStage": "infer", "DenseSchedule": "infer", "InferStage": "infer",
    "InFlight": "infer", "SegSchedule": "infer", "inference_stages": "infer", "LiveStage": "live",
    "live_senders": "live", "Filter3D": "motion", "MotionStage": "motion", "rest_bones": "motion",
    "RenderStage": "render", "SmoothStage": "smooth", "WorldStage": "world", "WriteStage": "write",
}

__all__ = sorted(_MODULE_OF)


def __getattr__(name: str):
    if name not in _MODULE_OF:
        raise AttributeError(f"module 'realtime.stages' has no attribute {name!r}")
    return getattr(importlib.import_module(f"realtime.stages.{_MODULE_OF[name]}"), name)
