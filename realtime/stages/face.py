"""The face stage: each tracked person's expression weights, lips and head rotation, read once
per frame (`realtime.rig.face.FaceSolver`); the tracks writer and the live senders use them."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from realtime.frames import Frame
from realtime.record import FACE_DECIMALS, HEAD_DECIMALS  # what the tracks file keeps of the weights and the head quaternion
from realtime.rig.face import FaceSolver


class FaceStage:
    """Pipeline stage after smooth: each tracked person's face (`Person.face`, `Person.lips_open`,
    `Person.head_rotation`), with a `FaceSolver` per track id (the neutral learned over its first
    `calibrate_seconds`). Values are rounded to the tracks file's decimals, so a replay of the
    file sends the very bytes the run sent."""

    name = "face"

    def __init__(self, keypoint_names: Sequence[str], *, calibrate_seconds: float = 2.0, forget_after: float = 5.0):
        self.keypoint_names = list(keypoint_names)
        self.calibrate_seconds = calibrate_seconds
        self.forget_after = forget_after  # seconds unseen before a track's solver is dropped
        self._solvers: dict[int, tuple[FaceSolver, float]] = {}

    def process(self, frame: Frame) -> Frame:
        people = []
        for person in frame.people:
            points = person.best_keypoints
            if person.track_id is None or points is None:
                people.append(person)
                continue
            solver = (self._solvers.get(person.track_id, (None, 0.0))[0]
                      or FaceSolver(self.keypoint_names, calibrate_seconds=self.calibrate_seconds))
            self._solvers[person.track_id] = (solver, frame.timestamp)
            state = solver.update(frame.timestamp, points, person.keypoint_scores)
            if state is not None:
                person = person.replace(face=np.round(state.weights, FACE_DECIMALS).astype(np.float32),
                                        lips_open=round(float(state.lips_open), FACE_DECIMALS),
                                        head_rotation=np.round(state.head_rotation, HEAD_DECIMALS).astype(np.float32))
            people.append(person)
        stale = [k for k, (_, seen) in self._solvers.items() if frame.timestamp - seen > self.forget_after]
        for k in stale:
            del self._solvers[k]
        return frame.replace(people=tuple(people))

    def close(self) -> None:
        self._solvers.clear()
