"""The ground stage: each tracked person's 3D keypoints at pose rate on a steady metric scale,
and their foot contacts (`realtime.rig.lift`, `realtime.rig.floor`, `realtime.rig.contact_model`), with
an optional fixed lag for hindsight."""

from __future__ import annotations

import math
from collections import deque
from typing import Optional, Sequence

import numpy as np

from realtime.frames import FLOOR_UP_DECIMALS, Frame
from realtime.options import CONTACT_DECIDERS, MAX_MOTION_LAG_MS
from realtime.rig.contact_model import ContactNet, default_model
from realtime.rig.contacts import ContactDetector, ContactGates
from realtime.rig.floor import Floor, FloorEstimator, FloorGates
from realtime.rig.floor_scene import ScenePlanes, body_cues, grid_shape
from realtime.rig.learned_contacts import LearnedContacts
from realtime.rig.leg_ik import SIDES
from realtime.rig.lift import Lifter, LiftGates
from realtime.rig.scale import FloorDistanceScale
from realtime.stages.egomotion import fresh_map, person_mask


class GroundStage:
    """Pipeline stage after smooth: each tracked person's 3D keypoints on every frame, on a steady
    metric scale, and their foot contact.

    `Person.keypoints3d`: on depth frames the pointmap's, divided by the frame's scale (first the background's:
    with a still camera against the floor's distance, `FloorDistanceScale`, with a moving one the egomotion
    stage's `Odometry.pointmap_scale`; then against the person's own bone lengths, `realtime.rig.scale`), each on
    its keypoint's ray; between depth frames lifted from the 2D
    keypoints (`Lifter`), so the tracks file and the live sinks get 3D at pose rate; a foot the
    contact detector had planted on the last frame (or that stands still in the image) is held along
    the line of sight. Left None before the person's first depth frame. Once the egomotion stage (run
    before this one) says the camera moves (`Frame.odometry.moving`), that hold is in the world: the
    lifter gets the camera's motion since the person's last frame, so a dolly's motion along the line
    of sight does not carry a planted foot with it.
    `Person.contacts`: the rule-based `ContactDetector` (`contacts="learned"`: the learned contact model,
    `realtime.rig.learned_contacts.LearnedContacts`, the only one that uses `lag`) on those points against the
    camera's floor, one for everyone (`FloorEstimator` on the depth frames); None until the floor is known. The floor's tilt
    comes from the pointmap's background where it shows the floor the people stand on
    (`realtime.rig.floor_scene.ScenePlanes`, on frames with a pointmap of their own, the people
    masked as for egomotion), its height from the feet; without a pointmap, or too little floor in
    view, the tilt comes from the feet and the body's up as before. `scene_floor=False`: always so
    (bench/rig.py's comparison).
    `Frame.floor_up`: that scene's normal in this frame's camera, for the world stage's up; None where
    the tilt comes from the feet.
    `contact_gates`, `floor_gates`, `lift_gates`: the rig's gates (`ContactGates`, `FloorGates`, `LiftGates`;
    None: the defaults). `contact_model`: the learned model's weights (None: the package's).
    `lag` (s): hindsight. 0: each frame leaves with its contacts decided from it and the frames before (`process`).
    Above 0 the stage holds each frame until a frame `lag` seconds later has come (`push`, and `flush` at the end,
    which the pipeline calls), and its contacts are decided seeing the model's grid up to that far after it (a
    fixed-lag smoother; the lifter still holds the feet decided without hindsight, frame by frame). Every frame
    leaves once, in order. `MAX_LAG` at most.
    """

    name = "ground"
    MAX_LAG = MAX_MOTION_LAG_MS / 1000.0  # s

    def __init__(self, keypoint_names: Sequence[str], *, forget_after: float = 5.0, stabilise_scale: bool = True,
                 scene_floor: bool = True, contact_gates: Optional[ContactGates] = None,
                 floor_gates: Optional[FloorGates] = None, lift_gates: Optional[LiftGates] = None,
                 contacts: str = "rules", contact_model: Optional[ContactNet] = None, lag: float = 0.0):
        if contacts not in CONTACT_DECIDERS:
            raise ValueError(f"GroundStage's contacts is one of {CONTACT_DECIDERS}, got {contacts!r}")
        if isinstance(lag, bool) or not isinstance(lag, (int, float)) or not math.isfinite(lag) or not 0 <= lag <= self.MAX_LAG:
            raise ValueError(f"GroundStage's lag is seconds from 0 to {self.MAX_LAG:g}, got {lag!r}")
        self.keypoint_names = list(keypoint_names)
        self.contact_gates, self.lift_gates = contact_gates or ContactGates(), lift_gates or LiftGates()
        self.contacts = contacts
        self.contact_model = (contact_model or default_model()) if contacts == "learned" else None
        self.lag = float(lag)
        self._held: deque = deque()  # frames waiting for their lag: (frame, {track id: its contacts' decider})
        self.forget_after = forget_after
        self.stabilise_scale = stabilise_scale  # False only to measure what it brings (bench/rig.py)
        self.scene = ScenePlanes() if scene_floor else None
        self._normal: Optional[np.ndarray] = None  # the scene's floor normal in the last frame's camera
        self._floor_scale = FloorDistanceScale()  # a still camera's frame scale from its floor's distance
        index = {n: i for i, n in enumerate(self.keypoint_names)}
        self._neck, self._hips = index["neck"], [index["left_hip"], index["right_hip"]]
        self._people: dict[int, tuple] = {}  # track id -> (Lifter, contact decider or None, last seen)
        self._poses: dict[int, np.ndarray] = {}  # track id -> odometry_from_camera on the person's last frame
        self.floors = FloorEstimator(self.keypoint_names, gates=floor_gates or FloorGates())

    @property
    def floor(self) -> Optional[Floor]:
        """The camera's floor on the last frame: the feet's fit, turned to the scene's normal for this
        frame's camera when there is one (a moving camera's floor turns with it between refits)."""
        floor = self.floors.floor
        if floor is None or self._normal is None:
            return floor
        return Floor(self._normal, floor.point)

    def process(self, frame: Frame) -> Frame:
        """One frame in, the same frame out (no lag)."""
        if self.lag > 0:
            raise ValueError("a GroundStage with a lag holds frames: give them to push() and call flush() at the end")
        return self._analyse(frame)[0]

    def push(self, frame: Frame) -> list[Frame]:
        """Take a frame; the frames whose lag has passed leave, oldest first (none, one or several)."""
        analysed, deciders = self._analyse(frame)
        if self.lag <= 0:
            return [analysed]
        self._held.append((analysed, deciders))
        return self._release(frame.timestamp - self.lag + 1e-6)

    def flush(self) -> list[Frame]:
        """Every frame still held (the end of the source, or a stop), with the hindsight there is."""
        return self._release(math.inf)

    def _release(self, until: float) -> list[Frame]:
        """The held frames at or before `until` (s), their contacts decided with hindsight."""
        out = []
        while self._held and self._held[0][0].timestamp <= until:
            frame, deciders = self._held.popleft()
            people = []
            for person in frame.people:
                decider = deciders.get(person.track_id)
                if decider is not None and person.contacts is not None:
                    person = person.replace(contacts=decider.decide(frame.timestamp))
                people.append(person)
            out.append(frame.replace(people=tuple(people)))
        return out

    def _analyse(self, frame: Frame) -> tuple[Frame, dict]:
        """The frame with its people's 3D keypoints and their contacts decided without hindsight, and the learned
        deciders of the people given contacts (track id -> `LearnedContacts`), for `decide` once the lag has passed."""
        normal, frame_scale = self._read_scene(frame)
        self._normal = normal
        people, deciders = [], {}
        for person in frame.people:
            if person.track_id is None or person.keypoints is None:
                people.append(person)
                continue
            lifter, detector, _ = self._people.get(person.track_id, (None, None, 0.0))
            lifter = lifter or Lifter(self.keypoint_names, stabilise_scale=self.stabilise_scale, gates=self.lift_gates)
            planted = None if detector is None else [detector.state[side] for side in SIDES]  # the last frame's
            measured = None if person.keypoints3d is None else np.asarray(person.keypoints3d, np.float64) / frame_scale
            points = lifter.update(person.best_keypoints, measured, person.keypoint_scores, planted,
                                   self._camera_motion(frame, person.track_id), frame.timestamp)
            if points is not None and person.keypoints3d is not None:  # a depth frame: floor candidates
                self.floors.add(points, normal)
            if detector is None and self.floor is not None:
                detector = (ContactDetector(self.floor, self.keypoint_names, gates=self.contact_gates)
                            if self.contact_model is None else
                            LearnedContacts(self.floor, self.keypoint_names, net=self.contact_model, lag=self.lag))
            self._people[person.track_id] = (lifter, detector, frame.timestamp)
            if points is not None:
                person = person.replace(keypoints3d=points.astype(np.float32))
                if detector is not None:
                    detector.floor = self.floor  # the latest refit
                    if isinstance(detector, LearnedContacts):
                        # the held frames of this person whose lag passes with this frame: decided in the same pass
                        due = [f.timestamp for f, d in self._held if d.get(person.track_id) is detector
                               and f.timestamp <= frame.timestamp - self.lag + 1e-6] if self.lag > 0 else []
                        person = person.replace(contacts=detector.update(frame.timestamp, points, hindsight=due))
                        deciders[person.track_id] = detector
                    else:
                        person = person.replace(contacts=detector.update(frame.timestamp, points))
            people.append(person)
        for track in [k for k, (_, _, seen) in self._people.items() if frame.timestamp - seen > self.forget_after]:
            del self._people[track]
            self._poses.pop(track, None)
        floor_up = None if normal is None else np.round(normal, FLOOR_UP_DECIMALS)  # the tracks file's numbers
        return frame.replace(people=tuple(people), floor_up=floor_up), deciders

    def _read_scene(self, frame: Frame) -> tuple[Optional[np.ndarray], float]:
        """(the floor's up in this frame's camera from the backgrounds seen so far, this frame's too when
        it has a pointmap of its own and people with 3D, or None: the feet's tilt; the frame's scale, by which
        its people's measured 3D are divided: with a still camera from the distance of the floor found in this
        frame's background, `FloorDistanceScale`; with a moving one the egomotion stage's
        `Odometry.pointmap_scale` (its background corners' depths against its map, so the people share the
        camera path's metres); else 1)."""
        frame_scale = 1.0
        odometry = frame.odometry  # the egomotion stage's
        still = odometry is None or not odometry.moving
        if not still:  # a moving camera's distance to the floor changes: start again once it is still
            self._floor_scale.reset()
            if odometry.pointmap_scale is not None and self.stabilise_scale:  # measured on the background corners
                frame_scale = odometry.pointmap_scale
        if self.scene is None:
            return None, frame_scale
        rotation = None if odometry is None else odometry.odometry_from_camera[:3, :3]
        pointmap = fresh_map(frame, "pointmap")
        measured = [np.asarray(p.keypoints3d, np.float64) for p in frame.people if p.keypoints3d is not None]
        cues = body_cues(measured, self.floors.feet, self._hips, self._neck) if pointmap is not None and measured else None
        if cues is not None:
            found = self.scene.add(pointmap, person_mask(frame, grid_shape(pointmap.shape)), *cues, rotation)
            if found is not None and still and self.stabilise_scale:
                frame_scale = self._floor_scale.update(abs(float(found.normal @ found.point)))
        return self.scene.normal(rotation, moving=not still), frame_scale

    def _camera_motion(self, frame: Frame, track: int) -> Optional[np.ndarray]:
        """(4, 4) this frame's camera from the one of the person's last frame, while the egomotion stage
        says the camera moves; None (the hold in the camera frame, as without egomotion) otherwise: a
        camera not seen to move leaves the points exactly as they were."""
        odometry = frame.odometry
        if odometry is None:
            self._poses.pop(track, None)
            return None
        pose = odometry.odometry_from_camera
        last = self._poses.get(track)
        self._poses[track] = pose
        if not odometry.moving or last is None:
            return None
        return np.linalg.inv(pose) @ last

    def close(self) -> None:
        self._held.clear()
        self._people.clear()
        self._poses.clear()
