"""The world stage: the camera's pose in a world frame every frame (`Frame.camera`), each
performer's height, and, once the camera is seen to move, foot contacts in the world (the motion
stage then filters, locks and solves in the world: `Person.bones` root in world coordinates).

    ... -> ground -> world -> motion -> live -> ...

Per frame: `realtime.rig.egomotion.CameraTracker` on the frame's gray image (downscaled to at most
`max_side` pixels) with the people masked (the seg's person classes on frames it was computed on,
else the person boxes filled) and the pointmap on the frames it was computed on; the ground stage's
3D keypoints of each person's depth frames fix the world (`realtime.rig.world.WorldAnchor`: the
floor in the odometry frame, origin under the first person's start). `--camera`:
- `static`: no egomotion; the world is the static camera's floor frame (the camera's pose in it is
  constant); people stay camera-relative (`Camera.world` False), as without this stage.
- `moving`: egomotion, and people in the world as soon as the floor is known.
- `auto` (default): egomotion; people in the world once the camera is seen to move (its pose more
  than MOVED_M or MOVED_DEG from where it started) and the floor is known; until then as `static`.
"""

from __future__ import annotations

import logging
from typing import Optional, Sequence

import cv2
import numpy as np

from realtime.frames import HEIGHT_DECIMALS, Frame, Person, rounded_camera
from realtime.rig.egomotion import CameraTracker, intrinsics_from_pointmap
from realtime.rig.ground import ContactDetector, Floor
from realtime.rig.world import HeightEstimator, WorldAnchor, transform_points

log = logging.getLogger(__name__)

CAMERA_MODES = ("static", "moving", "auto")
MOVED_M, MOVED_DEG = 0.03, 1.0  # the camera has moved: this far from its first pose (auto)
BOX_MARGIN = 0.05  # person boxes grown by this fraction of their size when they stand in for the seg
WORLD_FLOOR = Floor(np.array([0.0, 1.0, 0.0]), np.zeros(3))


def person_mask(frame: Frame, shape: tuple[int, int]) -> Optional[np.ndarray]:
    """(h, w) bool, True on people, at `shape` (h, w): the seg's person classes when the seg was
    computed on this frame, else the person boxes filled (grown by BOX_MARGIN); None: nobody."""
    dense = frame.dense
    if dense is not None and dense.seg is not None and dense.computed_on_of("seg") == frame.index:
        seg = dense.seg > 0
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


class WorldStage:
    """Pipeline stage between ground and motion (see the module's docstring). `camera`: 'static',
    'moving' or 'auto'; `max_side`: frames larger than this (pixels, the longer side) are tracked
    downscaled (the cost); `forget_after`: seconds after which a person not seen is forgotten."""

    name = "world"

    def __init__(self, keypoint_names: Sequence[str], *, camera: str = "auto", max_side: int = 640,
                 forget_after: float = 5.0, tracker: Optional[CameraTracker] = None):
        if camera not in CAMERA_MODES:
            raise ValueError(f"camera must be one of {CAMERA_MODES}, got {camera!r}")
        self.keypoint_names = list(keypoint_names)
        self.mode, self.max_side, self.forget_after = camera, max_side, forget_after
        self.tracker = None if camera == "static" else (tracker or CameraTracker())
        self.anchor = WorldAnchor(self.keypoint_names)
        self.moved = camera == "moving"
        self.moved_at: Optional[int] = None  # the first frame whose people are in the world
        self.heights: dict[int, tuple[float, float]] = {}  # track id -> the last (height m, confidence)
        self._people: dict[int, tuple[Optional[ContactDetector], HeightEstimator, float]] = {}
        self._intrinsics_sum, self._intrinsics_count = np.zeros(4), 0  # static: fitted to the pointmaps

    def process(self, frame: Frame) -> Frame:
        dense = frame.dense
        depth_frame = dense is not None and dense.pointmap is not None and dense.computed_on_of("pointmap") == frame.index
        odometry_from_camera, status, intrinsics = self._track(frame, depth_frame)
        if self.mode == "auto" and not self.moved and status == "tracking":
            self.moved = _moved(odometry_from_camera)
        for person in frame.people:  # the world from the people's feet and first place
            if depth_frame and person.track_id is not None and person.keypoints3d is not None:
                self.anchor.add(odometry_from_camera, person.keypoints3d)
        world = self.anchor.frame
        world_from_camera = world.camera(odometry_from_camera)
        in_world = self.moved and world.grounded
        if in_world and self.moved_at is None:
            self.moved_at = frame.index
            log.info("the camera moves: people in the world frame from frame %d", frame.index)
        people = tuple(self._person(frame, p, world_from_camera, world.grounded, in_world, depth_frame) for p in frame.people)
        for track in [k for k, (_, _, seen) in self._people.items() if frame.timestamp - seen > self.forget_after]:
            del self._people[track]
        camera = rounded_camera(world_from_camera, intrinsics, status, in_world, world.grounded)
        return frame.replace(people=people, camera=camera)

    def _track(self, frame: Frame, depth_frame: bool) -> tuple[np.ndarray, str, Optional[np.ndarray]]:
        """(odometry_from_camera (4, 4), status, intrinsics in original pixels or None)."""
        if self.tracker is None:  # static: the camera is the odometry frame; intrinsics from the pointmaps
            if depth_frame:
                try:
                    self._intrinsics_sum += intrinsics_from_pointmap(frame.dense.pointmap, (frame.width, frame.height))
                    self._intrinsics_count += 1
                except ValueError:  # a pointmap with too few valid points
                    pass
            intrinsics = self._intrinsics_sum / self._intrinsics_count if self._intrinsics_count else None
            return np.eye(4), "static", intrinsics
        scale = min(1.0, self.max_side / max(frame.width, frame.height))
        gray = cv2.cvtColor(frame.image, cv2.COLOR_RGB2GRAY)
        if scale < 1.0:
            gray = cv2.resize(gray, (round(frame.width * scale), round(frame.height * scale)), interpolation=cv2.INTER_AREA)
        mask = person_mask(frame, gray.shape)
        pose = self.tracker.update(gray, mask, frame.dense.pointmap if depth_frame else None)
        intrinsics = self.tracker.intrinsics
        if intrinsics is not None and scale < 1.0:  # tracking pixels -> original pixels (pixel centres)
            sx, sy = frame.width / gray.shape[1], frame.height / gray.shape[0]
            intrinsics = np.array([intrinsics[0] * sx, intrinsics[1] * sy, (intrinsics[2] + 0.5) * sx - 0.5,
                                   (intrinsics[3] + 0.5) * sy - 0.5])
        return pose.world_from_camera, pose.status, intrinsics

    def _person(self, frame: Frame, person: Person, world_from_camera: np.ndarray, grounded: bool, in_world: bool,
                depth_frame: bool) -> Person:
        if person.track_id is None or person.keypoints3d is None:
            return person
        detector, height, _ = self._people.get(person.track_id, (None, None, 0.0))
        height = height or HeightEstimator(self.keypoint_names)
        if grounded and detector is None:
            detector = ContactDetector(WORLD_FLOOR, self.keypoint_names)
        self._people[person.track_id] = (detector, height, frame.timestamp)
        if not grounded:
            return person
        points = transform_points(world_from_camera, person.keypoints3d)
        contacts = detector.update(frame.timestamp, points, camera=world_from_camera[:3, 3])  # history kept warm
        if depth_frame:
            height.add(points)
            stature, confidence = height.estimate()
            if stature is not None:
                self.heights[person.track_id] = (round(stature, HEIGHT_DECIMALS), round(confidence, HEIGHT_DECIMALS))
        changes = {}
        if person.track_id in self.heights:
            changes["height"] = self.heights[person.track_id]
        if in_world:  # the feet on the world's floor: a planted foot stays put in the world
            changes["contacts"] = contacts
        return person.replace(**changes) if changes else person

    def summary_lines(self) -> list[str]:
        """The camera and each performer's height, for the run's summary."""
        if self.mode == "static":
            lines = ["camera: static (--camera static): roots and contacts camera-relative, the camera path constant"]
        elif self.moved_at is not None:
            lines = [f"camera: moved; roots, contacts and exports in the world frame from frame {self.moved_at} "
                     f"(--camera {self.mode})"]
        elif self.moved:
            lines = [f"camera: moved, but the floor was never fitted, so roots stayed camera-relative (--camera {self.mode})"]
        else:
            lines = ["camera: static (not seen to move): roots and contacts camera-relative"]
        for track, (stature, confidence) in sorted(self.heights.items()):
            lines.append(f"height: person {track} {stature:.2f} m (confidence {confidence:.2f})")
        return lines

    def close(self) -> None:
        self._people.clear()


def _moved(odometry_from_camera: np.ndarray) -> bool:
    """The camera is more than MOVED_M or MOVED_DEG away from its first pose."""
    cosine = (np.trace(odometry_from_camera[:3, :3]) - 1) / 2
    angle = np.degrees(np.arccos(np.clip(cosine, -1.0, 1.0)))
    return bool(np.linalg.norm(odometry_from_camera[:3, 3]) > MOVED_M or angle > MOVED_DEG)
