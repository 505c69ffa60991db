"""The stages of a run, one module each, every one a plain object with `process(frame) -> frame`
and `close()`; the pipeline (`realtime.pipeline`) owns the threads.

    detect -> infer -> collect -> smooth -> face -> egomotion -> ground -> world -> motion -> live -> render -> write

`detect` person boxes; `infer`/`collect` launch a frame on the device and wait for it;
`smooth` identities and the live 2D filter; `face` expressions and head rotation; `egomotion` the
camera's pose in the odometry frame (`Frame.camera`, `--camera`); `ground` 3D keypoints at pose rate
and foot contacts (planted feet held in the world when the camera moves), and the floor's up from the
pointmap's background (`Frame.floor_up`); `world` the camera's pose in a world frame (`Frame.camera`
again; its up `Frame.floor_up` when measured), heights, and world contacts once the camera moves;
`motion` the live 3D filter, foot locking and the skeleton solve (`Person.bones`); `live` the
avatar's senders (VMC, OSC), before anything is drawn or written; `render` the picture; `write`
the sinks (tracks, video, viewer, progress).
`realtime.rig` is the math they call.
"""

from realtime.stages.detect import DetectStage, Feedback
from realtime.stages.egomotion import EgomotionStage
from realtime.stages.face import FaceStage
from realtime.stages.ground import GroundStage
from realtime.stages.infer import CollectStage, DenseSchedule, InferStage, InFlight, SegSchedule, inference_stages
from realtime.stages.live import LiveStage, live_senders
from realtime.stages.motion import Filter3D, MotionStage, rest_bones
from realtime.stages.render import RenderStage
from realtime.stages.smooth import SmoothStage
from realtime.stages.world import WorldStage
from realtime.stages.write import WriteStage

__all__ = ["CollectStage", "DenseSchedule", "DetectStage", "EgomotionStage", "FaceStage", "Feedback", "Filter3D",
           "GroundStage", "InFlight",
           "InferStage", "LiveStage", "MotionStage", "RenderStage", "SegSchedule", "SmoothStage", "WorldStage", "WriteStage",
           "inference_stages",
           "live_senders", "rest_bones"]
