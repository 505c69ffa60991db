"""The world stage: the camera's pose in a world frame every frame (`Frame.camera`), each
performer's height, and, once the camera is seen to move, foot contacts in the world (the motion
stage then filters, locks and solves in the world: `Person.bones` root in world coordinates).

    ... -> egomotion -> ground -> world -> motion -> live -> ...

Per frame: the egomotion stage's camera (`realtime.stages.egomotion`: its pose in the odometry
frame, intrinsics, status, and whether it moves); the ground stage's 3D keypoints of each person's
depth frames fix the world (`realtime.rig.world.WorldAnchor`: the floor in the odometry frame,
origin under the first person's start), its up the ground stage's scene floor (`Frame.floor_up`,
from the pointmap's background) when it has one, else the feet's fit; its height fitted once more
from each person's depth frames after their first SCALE_SETTLE (the ground stage's scale of a new
track is not steady before then), unless people are in the world by then. `--camera`:
- `static`: no egomotion; the world is the static camera's floor frame (the camera's pose in it is
  constant once that height is in); people stay camera-relative (`Camera.world` False), as without
  this stage.
- `moving`: egomotion, and people in the world as soon as the floor is known.
- `auto` (default): egomotion; people in the world once the camera is seen to move (the egomotion
  stage's `Odometry.moving`: its pose more than `MOVED_M` or `MOVED_DEG` from where it started) and the
  floor is known; until then as `static`.
"""

from __future__ import annotations

import logging
from typing import Optional, Sequence

import numpy as np

from realtime.frames import HEIGHT_DECIMALS, Frame, Person, rounded_camera
from realtime.options import CONTACT_DECIDERS
from realtime.rig.contact_model import ContactNet, default_model
from realtime.rig.contacts import ContactDetector
from realtime.rig.floor import Floor
from realtime.rig.learned_contacts import LearnedContacts
from realtime.rig.scale import MIN_HISTORY
from realtime.rig.world import HeightEstimator, WorldAnchor, transform_points
from realtime.stages.egomotion import CAMERA_MODES, fresh_map

log = logging.getLogger(__name__)

WORLD_FLOOR = Floor(np.array([0.0, 1.0, 0.0]), np.zeros(3))
# depth frames of a track before its feet set the floor's height: the ground stage's scale filter takes no scale out
# before it has seen MIN_HISTORY of them, and the still camera's floor-distance scale is relative to the few frames
# it has seen (bench/RESULTS.md, "Issue 51: the floor's height and penetration")
SCALE_SETTLE = MIN_HISTORY


class WorldStage:
    """Pipeline stage between ground and motion, after the egomotion stage (see the module's
    docstring). `camera`: 'static', 'moving' or 'auto', as given to the egomotion stage (for the
    summary); `forget_after`: seconds after which a person not seen is forgotten; `contacts`: how the
    feet's contacts in the world are decided, "rules" (`ContactDetector`) or "learned" (`LearnedContacts`
    with `contact_model`, default the package's), as the ground stage's. The world's decisions are made
    frame by frame, without the ground stage's hindsight (`--motion-lag`)."""

    name = "world"

    def __init__(self, keypoint_names: Sequence[str], *, camera: str = "auto", forget_after: float = 5.0,
                 contacts: str = "rules", contact_model: Optional[ContactNet] = None):
        if camera not in CAMERA_MODES:
            raise ValueError(f"camera must be one of {CAMERA_MODES}, got {camera!r}")
        if contacts not in CONTACT_DECIDERS:
            raise ValueError(f"WorldStage's contacts is one of {CONTACT_DECIDERS}, got {contacts!r}")
        self.contact_model = (contact_model or default_model()) if contacts == "learned" else None
        self.keypoint_names = list(keypoint_names)
        self.mode, self.forget_after = camera, forget_after
        self.anchor = WorldAnchor(self.keypoint_names)
        self.moved = False  # the egomotion stage has said the camera moves
        self.moved_at: Optional[int] = None  # the first frame whose people are in the world
        self.heights: dict[int, tuple[float, float]] = {}  # track id -> the last (height m, confidence)
        self._people: dict[int, tuple] = {}  # track id -> (contact decider or None, HeightEstimator, last seen)
        self._depth_frames: dict[int, int] = {}  # track id -> its depth frames so far

    def process(self, frame: Frame) -> Frame:
        odometry = frame.odometry
        if odometry is None:
            raise ValueError("the world stage needs the egomotion stage before it (Frame.odometry is None)")
        depth_frame = fresh_map(frame, "pointmap") is not None
        odometry_from_camera = odometry.odometry_from_camera
        self.moved = self.moved or odometry.moving
        for person in frame.people:  # the world from the people's feet and first place
            if depth_frame and person.track_id is not None and person.keypoints3d is not None:
                seen = self._depth_frames.get(person.track_id, 0)
                self._depth_frames[person.track_id] = seen + 1
                self.anchor.add(odometry_from_camera, person.keypoints3d, frame.floor_up, settled=seen >= SCALE_SETTLE,
                                time=frame.timestamp, track=person.track_id)
        world = self.anchor.frame
        world_from_camera = world.camera(odometry_from_camera)
        in_world = self.moved and world.grounded
        if in_world and self.moved_at is None:
            self.moved_at = frame.index
            self.anchor.freeze()  # people's world coordinates from here on: the world stays put
            log.info("the camera moves: people in the world frame from frame %d", frame.index)
        people = tuple(self._person(frame, p, world_from_camera, world.grounded, in_world, depth_frame) for p in frame.people)
        for track in [k for k, (_, _, seen) in self._people.items() if frame.timestamp - seen > self.forget_after]:
            del self._people[track]
            self._depth_frames.pop(track, None)
        camera = rounded_camera(world_from_camera, odometry.intrinsics, odometry.status, in_world, world.grounded,
                                odometry.pointmap_scale)
        return frame.replace(people=people, camera=camera)

    def _person(self, frame: Frame, person: Person, world_from_camera: np.ndarray, grounded: bool, in_world: bool,
                depth_frame: bool) -> Person:
        if person.track_id is None or person.keypoints3d is None:
            return person
        detector, height, _ = self._people.get(person.track_id, (None, None, 0.0))
        height = height or HeightEstimator(self.keypoint_names)
        if grounded and detector is None:
            detector = (ContactDetector(WORLD_FLOOR, self.keypoint_names) if self.contact_model is None else
                        LearnedContacts(WORLD_FLOOR, self.keypoint_names, net=self.contact_model))
        self._people[person.track_id] = (detector, height, frame.timestamp)
        if not grounded:
            return person
        points = transform_points(world_from_camera, person.keypoints3d)
        if in_world:
            person = person.replace(contacts=detector.update(frame.timestamp, points, camera=world_from_camera[:3, 3]))
        else:  # not in the world yet: the decider's history kept warm for when the camera moves
            detector.remember(frame.timestamp, points, camera=world_from_camera[:3, 3])
        if depth_frame:
            height.add(points)
            stature, confidence = height.estimate()
            if stature is not None:
                self.heights[person.track_id] = (round(stature, HEIGHT_DECIMALS), round(confidence, HEIGHT_DECIMALS))
        if person.track_id in self.heights:
            person = person.replace(height=self.heights[person.track_id])
        return person

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
        self._depth_frames.clear()

