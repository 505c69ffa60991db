"""The egomotion stage: the camera's pose every frame in the odometry frame (`Frame.odometry`), for
the ground stage's lifter (a planted foot held in the world) and the world stage (which anchors that
pose in the world).

    ... -> face -> egomotion -> ground -> world -> motion -> ...

Per frame: `realtime.rig.egomotion.CameraTracker` on the frame's gray image (downscaled to at most
`max_side` pixels) with the people masked (the seg's person classes on frames it was computed on,
else the person boxes filled) and the pointmap on the frames it was computed on. `--camera`:
- `static`: no egomotion: the camera stays at the odometry origin (intrinsics from the pointmaps).
- `moving`: egomotion; the camera is said to move from the first frame.
- `auto` (default): egomotion; the camera moves once its pose is more than MOVED_M or MOVED_DEG
  from where it started.

What it hands on (`realtime.frames.Odometry`): odometry_from_camera (the first pointmap frame's camera;
not the world yet), the intrinsics in pixels of the original image, the tracker's status, `moving` = the
camera moves (as above): the frames on which the ground stage holds feet in the world and the world stage
may put the people in it, and on a frame with its own pointmap that pointmap's scale against the odometry's
metres (measured on the background corners at re-anchoring), by which the ground stage divides a moving
camera's people's 3D. The world stage anchors this pose in the world (`Frame.camera`).
"""

from __future__ import annotations

from typing import Optional

import cv2
import numpy as np

from realtime.frames import Frame, Odometry
from realtime.rig.egomotion import CameraTracker, intrinsics_from_pointmap

CAMERA_MODES = ("static", "moving", "auto")
MOVED_M, MOVED_DEG = 0.03, 1.0  # the camera has moved: this far from its first pose (auto)
BOX_MARGIN = 0.05  # person boxes grown by this fraction of their size when they stand in for the seg


def fresh_map(frame: Frame, name: str) -> Optional[np.ndarray]:
    """The frame's dense map `name` ("seg", "pointmap") when it was computed on this very frame,
    else None (a map reused from an earlier frame does not show this frame's camera)."""
    dense = frame.dense
    if dense is None or dense.computed_on_of(name) != frame.index:
        return None
    return dense.get(name)


def person_mask(frame: Frame, shape: tuple[int, int]) -> Optional[np.ndarray]:
    """(h, w) bool, True on people, at `shape` (h, w): the seg's person classes when the seg was
    computed on this frame, else the person boxes filled (grown by BOX_MARGIN); None: nobody."""
    seg = fresh_map(frame, "seg")
    if seg is not None:
        seg = seg > 0
        if seg.shape != shape:
            seg = cv2.resize(seg.astype(np.uint8), (shape[1], shape[0]), interpolation=cv2.INTER_NEAREST) > 0
        return seg
    if not frame.people:
        return None
    mask = np.zeros(shape, bool)
    sy, sx = shape[0] / frame.height, shape[1] / frame.width
    for person in frame.people:
        x1, y1, x2, y2 = np.asarray(person.box, np.float64)
        if not np.isfinite([x1, y1, x2, y2]).all():
            continue
        grow_x, grow_y = BOX_MARGIN * (x2 - x1), BOX_MARGIN * (y2 - y1)
        c1, c2 = int(max((x1 - grow_x) * sx, 0)), int(min(np.ceil((x2 + grow_x) * sx), shape[1]))
        r1, r2 = int(max((y1 - grow_y) * sy, 0)), int(min(np.ceil((y2 + grow_y) * sy), shape[0]))
        mask[r1:r2, c1:c2] = True
    return mask


class EgomotionStage:
    """Pipeline stage between face and ground (see the module's docstring). `camera`: 'static',
    'moving' or 'auto'; `max_side`: frames larger than this (pixels, the longer side) are tracked
    downscaled (the cost)."""

    name = "egomotion"

    def __init__(self, *, camera: str = "auto", max_side: int = 640, tracker: Optional[CameraTracker] = None):
        if camera not in CAMERA_MODES:
            raise ValueError(f"camera must be one of {CAMERA_MODES}, got {camera!r}")
        self.mode, self.max_side = camera, max_side
        self.tracker = None if camera == "static" else (tracker or CameraTracker())
        self.moved = camera == "moving"
        self._intrinsics_sum, self._intrinsics_count = np.zeros(4), 0  # static: fitted to the pointmaps

    def process(self, frame: Frame) -> Frame:
        odometry_from_camera, status, intrinsics, scale = self._track(frame, fresh_map(frame, "pointmap"))
        if self.mode == "auto" and not self.moved and status == "tracking":
            self.moved = _moved(odometry_from_camera)
        # Not rounded: the world stage rounds the pose it hands on (the tracks file's numbers).
        return frame.replace(odometry=Odometry(np.array(odometry_from_camera, np.float64), intrinsics, status, self.moved, scale))

    def _track(self, frame: Frame, pointmap: Optional[np.ndarray]
               ) -> tuple[np.ndarray, str, Optional[np.ndarray], Optional[float]]:
        """(odometry_from_camera (4, 4), status, intrinsics in original pixels or None, the pointmap's scale
        against the odometry's metres or None); `pointmap`: this frame's, None when it has none of its own."""
        if self.tracker is None:  # static: the camera is the odometry frame; intrinsics from the pointmaps
            if pointmap is not None:
                try:
                    self._intrinsics_sum += intrinsics_from_pointmap(pointmap, (frame.width, frame.height))
                    self._intrinsics_count += 1
                except ValueError:  # a pointmap with too few valid points
                    pass
            intrinsics = self._intrinsics_sum / self._intrinsics_count if self._intrinsics_count else None
            return np.eye(4), "static", intrinsics, None
        scale = min(1.0, self.max_side / max(frame.width, frame.height))
        gray = cv2.cvtColor(frame.image, cv2.COLOR_RGB2GRAY)
        if scale < 1.0:
            gray = cv2.resize(gray, (round(frame.width * scale), round(frame.height * scale)), interpolation=cv2.INTER_AREA)
        mask = person_mask(frame, gray.shape)
        pose = self.tracker.update(gray, mask, pointmap, timestamp=frame.timestamp)
        intrinsics = self.tracker.intrinsics
        if intrinsics is not None and scale < 1.0:  # tracking pixels -> original pixels (pixel centres)
            sx, sy = frame.width / gray.shape[1], frame.height / gray.shape[0]
            intrinsics = np.array([intrinsics[0] * sx, intrinsics[1] * sy, (intrinsics[2] + 0.5) * sx - 0.5,
                                   (intrinsics[3] + 0.5) * sy - 0.5])
        return pose.world_from_camera, pose.status, intrinsics, pose.pointmap_scale

    def close(self) -> None:
        pass


def _moved(odometry_from_camera: np.ndarray) -> bool:
    """The camera is more than MOVED_M or MOVED_DEG away from its first pose."""
    cosine = (np.trace(odometry_from_camera[:3, :3]) - 1) / 2
    angle = np.degrees(np.arccos(np.clip(cosine, -1.0, 1.0)))
    return bool(np.linalg.norm(odometry_from_camera[:3, 3]) > MOVED_M or angle > MOVED_DEG)
