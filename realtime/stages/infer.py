"""The inference stages: `InferStage` launches a frame on the device (`infer.Predictor.launch`)
and `CollectStage` waits for it (`Predictor.collect`), adding keypoints, dense maps and 3D
keypoints; `DenseSchedule` says when the dense tasks run."""

from __future__ import annotations

import collections
import threading
import time
from dataclasses import dataclass
from typing import Optional

import numpy as np

from realtime.frames import DenseMaps, Frame
from realtime.infer import Launched, Predictor
from realtime.stages.detect import Feedback


class DenseSchedule:
    """When normal and pointmap run: every `every` frames, or, with `every=None`, as often
    as the frame budget allows: from measured times of frames with and without them,
    every N frames with N the smallest that keeps inference within 1/fps on average."""

    MAX_GAP = 30  # even a GPU without headroom refreshes the maps this often

    def __init__(self, every: Optional[int], fps: Optional[float]):
        self._lock = threading.Lock()  # asked by the infer stage, told by the collect stage
        self.every = every
        self.budget = 1.0 / (fps or 30.0)
        self._base: Optional[float] = None  # seconds per frame without the dense tasks
        self._full: Optional[float] = None  # ... and with them
        self._last: Optional[int] = None

    def due(self, index: int) -> bool:
        """Whether frame `index` runs the dense tasks (asked once per frame, in order: a yes
        counts as run, so frames launched before this one is timed see it)."""
        with self._lock:
            due = self._last is None or index - self._last >= self.interval()
            if due:
                self._last = index
            return due

    def interval(self) -> int:
        if self.every is not None:
            return self.every
        if self._base is None or self._full is None:
            return 2  # measure a frame without the dense tasks next
        spare = self.budget - self._base
        extra = max(self._full - self._base, 0.0)
        if spare <= 0:
            return self.MAX_GAP
        return int(min(self.MAX_GAP, max(1, np.ceil(extra / spare))))

    def record(self, index: int, seconds: float, ran_dense: bool) -> None:
        with self._lock:
            self._record(index, seconds, ran_dense)

    def _record(self, index: int, seconds: float, ran_dense: bool) -> None:
        if ran_dense:
            self._full = seconds if self._full is None else 0.8 * self._full + 0.2 * seconds
        else:
            self._base = seconds if self._base is None else 0.8 * self._base + 0.2 * seconds


class InFlight:
    """Frames the infer stage launched and the collect stage has yet to wait for, oldest
    first (thread-safe). The pipeline keeps frames in order between stages, so the collect
    stage always takes the oldest."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._items: collections.deque = collections.deque()

    def put(self, index: int, item) -> None:
        with self._lock:
            self._items.append((index, item))

    def take(self, index: int):
        with self._lock:
            if not self._items or self._items[0][0] != index:
                first = self._items[0][0] if self._items else None
                raise RuntimeError(f"frame {index} reached the collect stage, but the oldest launched frame is {first}")
            return self._items.popleft()[1]

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)


@dataclass
class _Launched:
    work: Launched  # the Predictor's handle
    due: bool  # the dense tasks ran on this frame
    seconds: float  # spent launching


class InferStage:
    """Launches a frame's inference (`Predictor.launch`) and hands it on without waiting for
    the device; `CollectStage` waits for it. Every-frame tasks (pose, seg) on every frame;
    the dense tasks (normal, pointmap, albedo: `Task.dense` in `realtime.tasks`) when
    `schedule` says so, their last maps reused in between (DenseMaps.computed_on says from
    when). While the collect stage waits for frame N, this stage launches frame N+1, so
    the GPU has the next frame queued before the host needs the last one."""

    name = "infer"

    def __init__(self, predictor: Predictor, in_flight: InFlight, *, schedule: Optional[DenseSchedule] = None):
        self.predictor = predictor
        self.in_flight = in_flight
        self.schedule = schedule or DenseSchedule(every=1, fps=None)

    def process(self, frame: Frame) -> Frame:
        rows = self.predictor.tasks  # name -> realtime.tasks.Task
        dense_tasks = {name for name, t in rows.items() if t.dense}
        due = bool(dense_tasks) and self.schedule.due(frame.index)
        tasks = set(rows) if due else set(rows) - dense_tasks
        boxes = np.stack([p.box for p in frame.people]) if frame.people else np.zeros((0, 4), np.float32)
        start = time.perf_counter()
        work = self.predictor.launch(frame.image, boxes, tasks)
        self.in_flight.put(frame.index, _Launched(work, due, time.perf_counter() - start))
        return frame

    def close(self) -> None:
        pass


class CollectStage:
    """Waits for the frame `InferStage` launched (`Predictor.collect`) and adds the people's
    keypoints, the dense maps (reusing the last ones on frames without them) and, from a
    fresh pointmap, 3D keypoints."""

    name = "collect"

    def __init__(self, predictor: Predictor, in_flight: InFlight, feedback: Feedback, *,
                 schedule: Optional[DenseSchedule] = None, lift_3d: bool = True, min_score: float = 0.3):
        self.predictor = predictor
        self.in_flight = in_flight
        self.feedback = feedback
        self.schedule = schedule or DenseSchedule(every=1, fps=None)  # the infer stage's, to time it
        self.lift_3d = lift_3d
        self.min_score = min_score
        self._last_dense: Optional[DenseMaps] = None

    def process(self, frame: Frame) -> Frame:
        launched = self.in_flight.take(frame.index)
        start = time.perf_counter()
        pred = self.predictor.collect(launched.work)
        due = launched.due
        self.schedule.record(frame.index, launched.seconds + time.perf_counter() - start, due)

        rows = self.predictor.tasks
        dense = None
        if any(not t.per_person for t in rows.values()):
            reused = self._last_dense if not due else None
            maps = {}
            for task in rows.values():
                if task.per_person:
                    continue
                if task.name in pred.maps:
                    value = pred.maps[task.name]
                    maps[task.field] = value
                    maps.update({name: derive(value) for name, derive in task.derived.items()})
                elif reused is not None:
                    maps.update({name: reused.get(name) for name in task.fields})
            dense = DenseMaps(computed_on=frame.index if due or reused is None else reused.computed_on, **maps)
            if due:
                self._last_dense = dense
            self.feedback.set_seg(pred.seg)

        people = frame.people
        if any(t.per_person for t in rows.values()):
            points3d = self._lift(pred, dense, frame)
            people = tuple(
                p.replace(keypoints=pred.keypoints[i], keypoint_scores=pred.keypoint_scores[i],
                          keypoints3d=None if points3d is None else points3d[i])
                for i, p in enumerate(frame.people)
            )
        return frame.replace(people=people, dense=dense)

    def _lift(self, pred, dense: Optional[DenseMaps], frame: Frame) -> Optional[np.ndarray]:
        """3D keypoints from this frame's own pointmap; none on frames that reuse an older
        map (people move: a stale map would give wrong depths; offline smoothing fills gaps)."""
        if not self.lift_3d or pred.pointmap is None or len(pred.keypoints) == 0:
            return None
        from realtime.transforms import sample_keypoints_3d

        foreground = dense.seg > 0 if dense is not None and dense.seg is not None else None
        return sample_keypoints_3d(pred.pointmap, pred.keypoints, pred.keypoint_scores, (frame.height, frame.width),
                                   foreground, min_score=self.min_score)

    def close(self) -> None:
        pass


def inference_stages(predictor: Predictor, feedback: Feedback, *, schedule: Optional[DenseSchedule] = None,
                     lift_3d: bool = True) -> list:
    """The launching and the collecting stage of one Predictor, sharing their hand-off and schedule."""
    in_flight, schedule = InFlight(), schedule or DenseSchedule(every=1, fps=None)
    return [InferStage(predictor, in_flight, schedule=schedule),
            CollectStage(predictor, in_flight, feedback, schedule=schedule, lift_3d=lift_3d)]
