"""The motion stage: per tracked person, the live 3D filter, foot locking and the skeleton
solve, once per frame, into `Person.keypoints3d_smoothed` and `Person.bones` (the bones' lengths
from the depth frames' points, as the ground stage gave them: lifted frames stretch them). The live senders
(`realtime.sinks.osc`) and the tracks file only encode what it gives.

Runs after the ground stage, which has already lifted the 3D keypoints to every frame (between
depth frames) and found the foot contacts, and after the world stage: on frames whose
`Frame.camera.world` is set (the camera moves) the points are taken into the world before the
filter, the lock and the solve, so the filter smooths the body and not the camera's shake, a planted
foot stays put in the world, and the root is the hips' world position (two performers keep their
true distance). When a run switches to the world the filter, the locks and the root restart.
"""

from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

from realtime.frames import Bones, Frame, Person, rounded_bones
from realtime.rig.bones import bone_table
from realtime.rig.lock import FootLock, FootPin, LockGates, PinGates
from realtime.rig.solver import LiveSolver, camera_to_rig
from realtime.rig.world import RIG_FROM_CAMERA, transform_points
from realtime.stages.egomotion import fresh_map


class Filter3D:
    """The live keypoint filter (`trackers.live.LiveSmoother`) on 3D keypoints, per track id.
    Points not measured in a frame stay unknown (NaN): the solver holds those bones."""

    def __init__(self, method: Optional[str], smoothness: float, num_keypoints: int):
        self.smoother = None
        if method and method != "none":
            from trackers.live import LiveSmoother

            self.smoother = LiveSmoother(method=method, smoothness=smoothness, num_keypoints=num_keypoints)

    def __call__(self, timestamp: float, track_id: int, points: np.ndarray, scores: Optional[np.ndarray]) -> np.ndarray:
        points = np.asarray(points, dtype=np.float64)
        known = np.isfinite(points).all(axis=-1)
        if self.smoother is None or not known.any():
            return points
        scores = np.ones(len(points)) if scores is None else np.asarray(scores, dtype=np.float64)
        scores = np.where(known, np.nan_to_num(scores, nan=1.0), 0.0)
        smoothed, _ = self.smoother.update(timestamp, np.array([track_id]), np.nan_to_num(points)[None], scores[None],
                                           np.array([np.nan]))  # size: the person's own extent
        return np.where(known[:, None], smoothed[0].astype(np.float64), np.nan)


def rest_bones(keypoint_names: Sequence[str], fingers: bool = False):
    """The default skeleton at rest (identity rotations, the hips at standing height over the
    origin): what a sender sends for a performer not seen yet, and the body of `--vmc-face-only`."""
    solver = LiveSolver(list(keypoint_names), fingers=fingers)
    skeleton = solver.rest_skeleton()
    count = len(skeleton.bones)
    rotations = np.tile([0.0, 0.0, 0.0, 1.0], (count, 1))
    return rounded_bones([b.name for b in skeleton.bones], skeleton.offsets, [0.0, skeleton.floor_height(), 0.0], rotations,
                         np.ones(count, bool), True)


class _Performer:
    """One tracked person's motion state."""

    def __init__(self, keypoint_names: list[str], fingers: bool, lock_gates: LockGates, pin_gates: PinGates):
        self.solver = LiveSolver(keypoint_names, fingers=fingers)
        self.lock = FootLock(keypoint_names, gates=lock_gates)
        self.pin = FootPin(gates=pin_gates)
        self.last_seen = -np.inf
        self.last_frame = -1  # the stage's count of frames processed when the person was last solved


class MotionStage:
    """Per tracked person: `keypoints3d` through the live filter (`Person.keypoints3d_smoothed`),
    the feet in contact held where they landed (no added latency), and the skeleton solved
    (`Person.bones`, with held marks for bones whose points are not seen). A person without 3D yet
    gets the held pose. `fingers`: solve the 15 finger bones per hand too (`--vmc-fingers`). `lock_gates`: the
    foot lock's gates (`realtime.rig.lock.LockGates`; None: the defaults)."""

    name = "motion"

    def __init__(self, keypoint_names: Sequence[str], *, fingers: bool = False, smooth: Optional[str] = "one_euro",
                 smoothness: float = 0.5, forget_after: float = 5.0,
                 lock_gates: Optional[LockGates] = None, pin_gates: Optional[PinGates] = None):
        self.keypoint_names = list(keypoint_names)
        for name, given, kind in (("lock_gates", lock_gates, LockGates), ("pin_gates", pin_gates, PinGates)):
            if given is not None and not isinstance(given, kind):
                raise TypeError(f"MotionStage {name} takes a {kind.__name__} (any field overridden, e.g. "
                                f"{kind.__name__}()), got {type(given).__name__}")
        self.lock_gates, self.pin_gates = lock_gates or LockGates(), pin_gates or PinGates()
        index = {n: i for i, n in enumerate(self.keypoint_names)}
        self._feet = np.array([[index[f"{side}_ankle"], index[f"{side}_big_toe"], index[f"{side}_small_toe"]]
                               for side in ("left", "right")])
        self.fingers = fingers
        self.bone_names = tuple(b.name for b in bone_table(fingers))
        self.filter = Filter3D(smooth, smoothness, len(self.keypoint_names))
        self.forget_after = forget_after
        self._smooth, self._smoothness = smooth, smoothness
        self._performers: dict[int, _Performer] = {}
        self._in_world = False  # the last frame's people were solved in the world frame
        self._frames = 0  # frames processed

    def process(self, frame: Frame) -> Frame:
        in_world = frame.camera is not None and frame.camera.world
        if in_world != self._in_world:  # camera-relative -> world: nothing carried over
            self.filter = Filter3D(self._smooth, self._smoothness, len(self.keypoint_names))
            self._performers.clear()
            self._in_world = in_world
        people = tuple(self._solve(frame, p) if p.track_id is not None and p.keypoints is not None else p
                       for p in frame.people)
        self._frames += 1
        for track in [k for k, p in self._performers.items() if frame.timestamp - p.last_seen > self.forget_after]:
            del self._performers[track]
        return frame.replace(people=people)

    def _solve(self, frame: Frame, person: Person) -> Person:
        performer = self._performers.get(person.track_id)
        if performer is None:
            performer = self._performers[person.track_id] = _Performer(self.keypoint_names, self.fingers, self.lock_gates,
                                                                       self.pin_gates)
        performer.last_seen = frame.timestamp
        if performer.last_frame != self._frames - 1:
            performer.lock.reset()  # not on the last frame processed: the feet it showed are stale
            performer.pin.reset()
        performer.last_frame = self._frames
        smoothed, feet, measured = None, None, None
        points = np.full((len(self.keypoint_names), 3), np.nan)
        world = None  # (4, 4) the world in camera axes (x, -y, -z of the world) from the camera, when in the world
        if self._in_world:
            world = frame.camera.world_from_camera
            world[:3] = RIG_FROM_CAMERA @ world[:3]
        if person.keypoints3d is not None:
            points = person.keypoints3d if world is None else transform_points(world, person.keypoints3d)
            if fresh_map(frame, "pointmap") is not None:  # a depth frame's measured points: the bone lengths' samples
                measured = points
            points = self.filter(frame.timestamp, person.track_id, points, person.keypoint_scores)
            smoothed = (points if world is None else transform_points(np.linalg.inv(world), points)).astype(np.float32)
            if person.contacts is not None:  # a foot on the floor stays where it landed, the avatar's too
                shown = points
                floor = self._floor(frame)
                up = None if floor is None else RIG_FROM_CAMERA @ floor[0]  # the lock's axes are the camera's
                points = performer.lock.apply(frame.timestamp, points, person.contacts, measured is not None, up)
                feet = performer.pin.frame(frame.timestamp, performer.lock, self._rig_feet(points), self._rig_feet(shown),
                                           floor, measured is not None)
            else:
                performer.pin.reset()
        pose = performer.solver.update(points, absolute_root=world is not None, feet=feet, measured=measured)
        bones = rounded_bones(self.bone_names, pose.skeleton.offsets, pose.root_position, pose.rotations, pose.held,
                              pose.root_held)
        return person.replace(keypoints3d_smoothed=smoothed, bones=bones)

    def _rig_feet(self, points: np.ndarray) -> np.ndarray:
        """(K, 3) points as solved -> (2, 2, 3) left and right, ankle and toes (the big and small toe's midpoint), in
        the solver's rig axes."""
        feet = camera_to_rig(points[self._feet])
        return np.stack([feet[:, 0], 0.5 * (feet[:, 1] + feet[:, 2])], axis=1)

    def _floor(self, frame: Frame) -> Optional[tuple[np.ndarray, float]]:
        """The floor in the solver's rig axes, (up (3,), the height of their origin above it), or None while unknown:
        in the world it is y = 0; camera-relative it is the world stage's floor (`Frame.camera`, once grounded) in
        the camera's rig axes (x, -y, -z)."""
        if self._in_world:
            return np.array([0.0, 1.0, 0.0]), 0.0
        camera = frame.camera
        if camera is None or not camera.grounded:
            return None
        world_from_camera = camera.world_from_camera
        return RIG_FROM_CAMERA @ world_from_camera[1, :3], float(world_from_camera[1, 3])

    def close(self) -> None:
        self._performers.clear()


def recorded_fingers(bone_names) -> Optional[bool]:
    """Whether a recording's bones (its header's `bone_names`) hold the finger bones: False for the motion
    stage's 21 bones, True for its 51 (`fingers`); None for any other list (not solved by this stage)."""
    names = tuple(bone_names)
    for fingers in (False, True):
        if names == recorded_bone_names(fingers):
            return fingers
    return None


def recorded_bone_names(fingers: bool) -> tuple[str, ...]:
    """The names of the bones the motion stage solves (and a tracks file's header lists), in order."""
    return tuple(b.name for b in bone_table(fingers))


class FingerBones:
    """The finger bones for a recording whose bones have none (`sapiens-rt stream --vmc-fingers`): each
    frame through a motion stage with fingers and no live filter (the recording's 3D keypoints went
    through the run's), whose 30 finger bones join the recorded bones; those stay as recorded, so the
    body sends the same bytes as the run did."""

    name = "motion"

    def __init__(self, keypoint_names: Sequence[str]):
        self.solve = MotionStage(keypoint_names, fingers=True, smooth="none")
        self.bone_names = self.solve.bone_names

    def process(self, frame: Frame) -> Frame:
        solved = self.solve.process(frame)
        people = tuple(person if person.bones is None or again.bones is None else
                       person.replace(bones=with_fingers(person.bones, again.bones))
                       for person, again in zip(frame.people, solved.people))
        return frame.replace(people=people)

    def close(self) -> None:
        self.solve.close()


def with_fingers(body: Bones, solved: Bones) -> Bones:
    """`solved`'s bones (fingers and all) with every bone `body` has taken from `body`, its root too."""
    index = {name: i for i, name in enumerate(body.names)}
    take = np.array([index.get(name, -1) for name in solved.names])
    mine = take >= 0
    offsets, rotations, held = solved.offsets.copy(), solved.rotations.copy(), solved.held.copy()
    offsets[mine], rotations[mine], held[mine] = body.offsets[take[mine]], body.rotations[take[mine]], body.held[take[mine]]
    return Bones(solved.names, offsets, body.root_position, rotations, held, body.root_held)
