"""The inference stages: `InferStage` launches a frame on the device (`infer.Predictor.launch`)
and `CollectStage` waits for it (`Predictor.collect`), adding keypoints, dense maps and 3D
keypoints; `DenseSchedule` says when the dense tasks run, `SegSchedule` when seg does."""

from __future__ import annotations

import collections
import threading
import time
from dataclasses import dataclass
from typing import Callable, Optional

import numpy as np

from realtime.data import KEYPOINT_SCORE_THRESHOLD
from realtime.frames import DenseMaps, Frame
from realtime.infer import Launched, Predictor
from realtime.stages.detect import Feedback


class DenseSchedule:
    """When the dense tasks (normal, pointmap, albedo) run: every `every` frames, or, with
    `every=None`, as often as the frame budget allows: from measured times of frames with and
    without them, every N frames with N the smallest that keeps inference within 1/fps on
    average, and at most every MAX_GAP frames. Frames are counted as the infer stage launches
    them, not by source index (a live source's gate drops frames exactly when a run is behind)."""

    MAX_GAP = 30  # even a GPU without headroom refreshes the maps this often

    def __init__(self, every: Optional[int], fps: Optional[float]):
        self._lock = threading.RLock()  # asked by the infer stage, told by the collect stage
        self.every = every
        self.budget = 1.0 / (fps or 30.0)
        self._base: Optional[float] = None  # seconds per frame without these tasks
        self._full: Optional[float] = None  # ... and with them
        self._last: Optional[int] = None

    def due(self, index: int) -> bool:
        """Whether launch number `index` runs these tasks (asked once per frame, in order: a yes
        counts as run, so frames launched before this one is timed see it)."""
        with self._lock:
            due = self._last is None or index - self._last >= self.interval()
            if due:
                self._last = index
            return due

    def interval(self) -> int:
        with self._lock:
            if self.every is not None:
                return self.every
            if self._base is None or self._full is None:
                return 2  # measure a frame without these tasks next
            spare = self.budget - self._base
            if spare <= 0:
                return self.MAX_GAP
            return int(min(self.MAX_GAP, max(1, np.ceil(self.extra() / spare))))

    def extra(self) -> float:
        """Seconds these tasks add to a frame, as measured (0 until measured with and without)."""
        with self._lock:
            if self._base is None or self._full is None:
                return 0.0
            return max(self._full - self._base, 0.0)

    def record(self, index: int, seconds: float, ran: bool) -> None:
        with self._lock:
            if ran:
                self._full = seconds if self._full is None else 0.8 * self._full + 0.2 * seconds
            else:
                self._base = seconds if self._base is None else 0.8 * self._base + 0.2 * seconds


class SegSchedule(DenseSchedule):
    """When the every-frame maps (seg: the whole-image tasks that are not dense) run: with
    `every=None`, every frame while a frame with them fits the frame budget, every other frame
    when the run is behind (measured as for the dense tasks: frames with and without seg
    against 1/fps), the last map reused in between; or every `every` frames."""

    MAX_GAP = 2


def record_frame(seg: DenseSchedule, dense: DenseSchedule, index: int, seconds: float, ran_seg: bool,
                 ran_dense: bool) -> None:
    """Tell both schedules how long a frame took. Seg comes first (an every-frame task): it is
    timed on frames without the dense tasks (all frames while those run on every frame), and
    the dense tasks see seg at its average rate, filling the time that is left."""
    seg_extra = seg.extra()
    if not ran_dense or dense.interval() == 1:
        seg.record(index, seconds, ran_seg)
    dense.record(index, seconds - (seg_extra if ran_seg else 0.0) + seg_extra / seg.interval(), ran_dense)


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
    count: int  # launch number (what the schedules count)
    seg: bool  # the every-frame maps (seg) ran on this frame
    dense: bool  # the dense tasks ran on this frame
    seconds: float  # spent launching


class InferStage:
    """Launches a frame's inference (`Predictor.launch`) and hands it on without waiting for
    the device; `CollectStage` waits for it. Pose on every frame; seg (the whole-image tasks
    that are not dense) when `seg_schedule` says so: every frame, or every other frame when a
    live run is behind; the dense tasks (normal, pointmap, albedo: `Task.dense` in
    `realtime.tasks`) when `schedule` says so. Skipped maps are reused from their last frame
    (DenseMaps.computed_on_of says from which). While the collect stage waits for frame N,
    this stage launches frame N+1, so the GPU has the next frame queued before the host needs
    the last one."""

    name = "infer"

    def __init__(self, predictor: Predictor, in_flight: InFlight, *, schedule: Optional[DenseSchedule] = None,
                 seg_schedule: Optional[SegSchedule] = None, clock: Callable[[], float] = time.perf_counter):
        self.predictor = predictor
        self.in_flight = in_flight
        self.schedule = schedule or DenseSchedule(every=1, fps=None)
        self.seg_schedule = seg_schedule or SegSchedule(every=1, fps=None)
        self.clock = clock
        self._count = 0

    def process(self, frame: Frame) -> Frame:
        rows = self.predictor.tasks  # name -> realtime.tasks.Task
        dense_tasks = {name for name, t in rows.items() if t.dense}
        seg_tasks = {name for name, t in rows.items() if not t.per_person and not t.dense}
        count, self._count = self._count, self._count + 1
        due = bool(dense_tasks) and self.schedule.due(count)
        seg_due = bool(seg_tasks) and self.seg_schedule.due(count)
        tasks = set(rows) - (set() if due else dense_tasks) - (set() if seg_due else seg_tasks)
        boxes = np.stack([p.box for p in frame.people]) if frame.people else np.zeros((0, 4), np.float32)
        start = self.clock()
        work = self.predictor.launch(frame.image, boxes, tasks)
        self.in_flight.put(frame.index, _Launched(work, count, seg_due, due, self.clock() - start))
        return frame

    def close(self) -> None:
        pass


class CollectStage:
    """Waits for the frame `InferStage` launched (`Predictor.collect`) and adds the people's
    keypoints, the whole-image maps (reusing each task's last map on frames it skipped) and,
    from a fresh pointmap, 3D keypoints."""

    name = "collect"

    def __init__(self, predictor: Predictor, in_flight: InFlight, feedback: Feedback, *,
                 schedule: Optional[DenseSchedule] = None, seg_schedule: Optional[SegSchedule] = None,
                 lift_3d: bool = True, min_score: float = KEYPOINT_SCORE_THRESHOLD,
                 clock: Callable[[], float] = time.perf_counter):
        self.predictor = predictor
        self.in_flight = in_flight
        self.feedback = feedback
        self.schedule = schedule or DenseSchedule(every=1, fps=None)  # the infer stage's, to time it
        self.seg_schedule = seg_schedule or SegSchedule(every=1, fps=None)
        self.lift_3d = lift_3d
        self.min_score = min_score
        self.clock = clock
        self._last: dict[str, tuple[dict[str, np.ndarray], int]] = {}  # task -> (its fields, computed on)

    def process(self, frame: Frame) -> Frame:
        launched = self.in_flight.take(frame.index)
        start = self.clock()
        pred = self.predictor.collect(launched.work)
        record_frame(self.seg_schedule, self.schedule, launched.count, launched.seconds + self.clock() - start,
                     launched.seg, launched.dense)

        rows = self.predictor.tasks
        dense = None
        if any(not t.per_person for t in rows.values()):
            maps, computed_on = {}, {}
            for task in rows.values():
                if task.per_person:
                    continue
                if task.name in pred.maps:
                    value = pred.maps[task.name]
                    fields = {task.field: value, **{name: derive(value) for name, derive in task.derived.items()}}
                    self._last[task.name] = (fields, frame.index)
                if task.name in self._last:  # this frame's, or the last one it ran on
                    fields, index = self._last[task.name]
                    maps.update(fields)
                    computed_on.update(dict.fromkeys(fields, index))
            dense = DenseMaps(computed_on=min(computed_on.values(), default=frame.index), computed_on_each=computed_on,
                              **maps)
            if pred.seg is not None:  # a fresh map only: the boxes of a reused one are already known
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
        map (people move: a stale map would give wrong depths; offline smoothing fills gaps).
        The foreground mask is the newest seg map (at most one frame older when seg skips)."""
        if not self.lift_3d or pred.pointmap is None or len(pred.keypoints) == 0:
            return None
        from realtime.transforms import sample_keypoints_3d

        foreground = dense.seg > 0 if dense is not None and dense.seg is not None else None
        return sample_keypoints_3d(pred.pointmap, pred.keypoints, pred.keypoint_scores, (frame.height, frame.width),
                                   foreground, min_score=self.min_score)

    def close(self) -> None:
        pass


def inference_stages(predictor: Predictor, feedback: Feedback, *, schedule: Optional[DenseSchedule] = None,
                     seg_schedule: Optional[SegSchedule] = None, lift_3d: bool = True) -> list:
    """The launching and the collecting stage of one Predictor, sharing their hand-off and schedules."""
    in_flight = InFlight()
    schedule = schedule or DenseSchedule(every=1, fps=None)
    seg_schedule = seg_schedule or SegSchedule(every=1, fps=None)
    return [InferStage(predictor, in_flight, schedule=schedule, seg_schedule=seg_schedule),
            CollectStage(predictor, in_flight, feedback, schedule=schedule, seg_schedule=seg_schedule, lift_3d=lift_3d)]
