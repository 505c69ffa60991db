"""The detect stage: person boxes for each frame (`realtime.detect.BoxFinder`), and `Feedback`,
through which later stages hand the newest poses and seg map back to it."""

from __future__ import annotations

import threading
from typing import Callable, Optional

import numpy as np

from realtime.frames import Frame, Person


class Feedback:
    """The newest results of later stages, read by the detect stage (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._people: tuple[Person, ...] = ()
        self._seg: Optional[np.ndarray] = None

    def set_people(self, people: tuple[Person, ...]) -> None:
        with self._lock:
            self._people = people

    def set_seg(self, seg: Optional[np.ndarray]) -> None:
        with self._lock:
            self._seg = seg

    def get(self) -> tuple[tuple[Person, ...], Optional[np.ndarray]]:
        with self._lock:
            return self._people, self._seg


class DetectStage:
    name = "detect"

    def __init__(self, find_boxes: Callable, feedback: Feedback):
        self.find_boxes = find_boxes  # a realtime.detect.BoxFinder
        self.feedback = feedback

    def process(self, frame: Frame) -> Frame:
        previous, seg = self.feedback.get()
        boxes, scores, source = self.find_boxes(frame.image, frame.index, previous, seg)
        people = tuple(Person(box=np.asarray(b, np.float32), box_score=float(s)) for b, s in zip(boxes, scores))
        return frame.replace(people=people, boxes_from=source)

    def close(self) -> None:
        pass
