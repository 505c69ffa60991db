"""The smooth stage: identity (stable track ids) and the live 2D keypoint filter."""

from __future__ import annotations

import numpy as np

from realtime.frames import Frame
from realtime.stages.detect import Feedback


class SmoothStage:
    """Identity (stable track IDs) then the live keypoint filter per track."""

    name = "smooth"

    def __init__(self, tracker, smoother, feedback: Feedback):
        self.tracker = tracker  # trackers.identity.IdentityTracker, or None for stills (no identities)
        self.smoother = smoother  # trackers.live.LiveSmoother, or None for raw keypoints
        self.feedback = feedback

    def process(self, frame: Frame) -> Frame:
        people = frame.people
        if self.tracker is None:  # unrelated photos: nobody is followed from one to the next
            return frame
        if people and people[0].keypoints is not None:
            boxes = np.stack([p.box for p in people])
            kpts = np.stack([p.keypoints for p in people])
            scores = np.stack([p.keypoint_scores for p in people])
            ids = self.tracker.update(boxes, kpts, scores, frame.timestamp)
            people = tuple(p.replace(track_id=int(i) if i >= 0 else None) for p, i in zip(people, ids))
            confirmed = np.flatnonzero(ids >= 0)
            if self.smoother is not None and len(confirmed):
                sizes = boxes[confirmed, 3] - boxes[confirmed, 1]
                smoothed, predicted = self.smoother.update(frame.timestamp, ids[confirmed], kpts[confirmed],
                                                           scores[confirmed], sizes)
                people = list(people)
                for j, i in enumerate(confirmed):
                    people[i] = people[i].replace(keypoints_smoothed=smoothed[j], predicted=predicted[j])
                people = tuple(people)
        elif people:
            ids = self.tracker.update(np.stack([p.box for p in people]), None, None, frame.timestamp)
            people = tuple(p.replace(track_id=int(i) if i >= 0 else None) for p, i in zip(people, ids))
        else:
            self.tracker.update(np.zeros((0, 4), np.float32), None, None, frame.timestamp)
        self.feedback.set_people(people)
        return frame.replace(people=people)

    def close(self) -> None:
        pass
