"""Seg every other frame when a live run is behind (`SegSchedule`), its last map reused in
between: the schedule against a simulated frame budget (counts, no wall clock), then the
infer and collect stages on the stand-in GPU with a simulated clock (seg launches per
frame, the reused map, its frame, the boxes-from-seg feedback and the overlay), and
`--seg-every`."""

import copy

import numpy as np
import pytest

from realtime.errors import UserError
from realtime.frames import Frame, Person
from realtime.infer import Predictor
from realtime.stages import DenseSchedule, Feedback, SegSchedule, inference_stages
from realtime.stages.infer import record_frame
from tests.gpu_standin import StandinGPU


def _drive(seg: SegSchedule, dense: DenseSchedule, frames: int, pose: float, seg_cost: float,
           dense_cost: float = 0.0) -> tuple[list[int], list[int]]:
    """Frames on which seg and the dense tasks ran, each frame costing what ran on it."""
    ran_seg, ran_dense = [], []
    for i in range(frames):
        s, d = seg.due(i), dense_cost > 0 and dense.due(i)
        record_frame(seg, dense, i, pose + s * seg_cost + d * dense_cost, s, d)
        ran_seg += [i] * s
        ran_dense += [i] * d
    return ran_seg, ran_dense


def test_seg_every_frame_while_it_fits_every_other_when_behind():
    # 30 fps (33 ms): pose 10 ms + seg 10 ms fits; after one frame without seg (measuring), every frame
    ran, _ = _drive(SegSchedule(every=None, fps=30), DenseSchedule(every=1, fps=30), 40, 0.010, 0.010)
    assert ran == [0] + list(range(2, 40))
    # 60 fps (16.7 ms): 20 ms with seg does not fit: seg on every other frame (15 ms on average)
    ran, _ = _drive(SegSchedule(every=None, fps=60), DenseSchedule(every=1, fps=60), 40, 0.010, 0.010)
    assert ran == list(range(0, 40, 2))
    # even pose alone behind (25 ms at 60 fps): still every other frame, never rarer
    ran, _ = _drive(SegSchedule(every=None, fps=60), DenseSchedule(every=1, fps=60), 40, 0.025, 0.010)
    assert ran == list(range(0, 40, 2))


def test_a_fixed_seg_interval():
    ran, _ = _drive(SegSchedule(every=1, fps=60), DenseSchedule(every=1, fps=60), 6, 0.025, 0.010)
    assert ran == [0, 1, 2, 3, 4, 5]
    ran, _ = _drive(SegSchedule(every=3, fps=60), DenseSchedule(every=1, fps=60), 9, 0.001, 0.001)
    assert ran == [0, 3, 6]


def test_seg_and_the_dense_tasks_each_judge_their_own_cost():
    # 50 fps (20 ms): pose 10 + seg 4 fits, so seg runs every frame; the dense tasks (40 ms)
    # fill the 6 ms left: every ceil(40 / 6) = 7th frame once measured
    seg, dense = SegSchedule(every=None, fps=50), DenseSchedule(every=None, fps=50)
    ran_seg, ran_dense = _drive(seg, dense, 200, 0.010, 0.004, 0.040)
    assert set(range(100, 200)) <= set(ran_seg)
    assert np.diff([i for i in ran_dense if i >= 100]).tolist() == [7] * (len([i for i in ran_dense if i >= 100]) - 1)
    assert seg.extra() == pytest.approx(0.004, rel=0.05) and dense.extra() == pytest.approx(0.040, rel=0.05)
    # 100 fps (10 ms): pose 8 + seg 4 does not fit: seg every other frame, dense at its longest gap
    seg, dense = SegSchedule(every=None, fps=100), DenseSchedule(every=None, fps=100)
    ran_seg, ran_dense = _drive(seg, dense, 200, 0.008, 0.004, 0.040)
    assert [i for i in ran_seg if i >= 100] == list(range(100, 200, 2))
    assert dense.interval() == DenseSchedule.MAX_GAP


# -- the stages, on the stand-in GPU


IMAGE = np.random.default_rng(0).integers(0, 256, (96, 128, 3), dtype=np.uint8)
BOX = np.array([10, 10, 90, 90], np.float32)


@pytest.fixture(scope="module")
def task_models(fixtures_dir):
    from realtime.models import load_model

    return {task: load_model(task, fixtures_dir / f"{task}_weights.safetensors") for task in ("pose", "seg")}


class _Clock:
    """Simulated seconds: each launch advances it by what the launched tasks cost."""

    def __init__(self, costs: dict[str, float]):
        self.costs, self.now = costs, 0.0

    def __call__(self) -> float:
        return self.now


class _Timed:
    """A Predictor whose launches advance a simulated clock, each one remembered."""

    def __init__(self, predictor: Predictor, clock: _Clock):
        self.predictor, self.clock, self.launched = predictor, clock, []
        self.tasks = predictor.tasks

    def launch(self, image, boxes, tasks):
        self.launched.append(sorted(tasks))
        self.clock.now += sum(self.clock.costs[t] for t in tasks)
        return self.predictor.launch(image, boxes, tasks)

    def collect(self, launched):
        return self.predictor.collect(launched)


def _run_stages(predictor, seg_schedule: SegSchedule, frames: int, clock: _Clock):
    feedback = Feedback()
    infer, collect = inference_stages(predictor, feedback, seg_schedule=seg_schedule)
    infer.clock = collect.clock = clock
    out, fed = [], []
    pending = []
    for i in range(frames):  # two frames in flight: frame i+1 is launched before frame i is collected
        frame = Frame(index=3 * i, timestamp=i / 60, image=IMAGE, people=(Person(box=BOX, box_score=1.0),))
        pending.append(infer.process(frame))
        if len(pending) == 2:
            out.append(collect.process(pending.pop(0)))
            fed.append(feedback.get()[1])
    out += [collect.process(f) for f in pending]
    return out, fed


def test_stages_run_seg_on_every_other_frame_under_a_slow_budget_and_reuse_its_map(task_models):
    from realtime.detect import boxes_from_label_map
    from viz.compose import Layers, compose

    eager = Predictor(copy.deepcopy(task_models), input_hw=(128, 96), pad_batches=True, channels_last=True)
    want = eager.predict(IMAGE, BOX[None])
    clock = _Clock({"pose": 0.010, "seg": 0.010})  # 20 ms a frame with seg against a 60 fps budget
    with StandinGPU() as gpu:
        models = {task: copy.deepcopy(model).to("cuda") for task, model in task_models.items()}
        predictor = _Timed(Predictor(models, device="cuda", input_hw=(128, 96), cuda_graphs=True, max_batch=1), clock)
        predictor.predictor.warm_up(IMAGE.shape[:2])
        gpu.rec.clear()
        frames, fed = _run_stages(predictor, SegSchedule(every=None, fps=60), 8, clock)
        replays = [e.what for e in gpu.rec.log if e.kind == "op" and e.what.startswith("graph replay")]
        assert not gpu.rec.races and predictor.predictor._graphs.late == []
    seg_per_frame = ["seg" in tasks for tasks in predictor.launched]
    # frame 0 with seg, frame 1 without (measuring), then seg does not fit 16.7 ms: every other frame
    assert seg_per_frame == [True, False] * 4
    assert sum(seg_per_frame) / len(seg_per_frame) == 0.5 and len(replays) == 8 + 4  # pose 8, seg 4
    for i, frame in enumerate(frames):
        fresh = 2 * (i // 2)  # the launch whose seg map this frame shows
        assert frame.dense.computed_on_of("seg") == frames[fresh].index == frame.dense.computed_on
        assert frame.dense.seg is frames[fresh].dense.seg  # reused, not recomputed
        np.testing.assert_array_equal(frame.dense.seg, want.seg)
        np.testing.assert_array_equal(frame.people[0].keypoints, want.keypoints[0])  # pose on every frame
    # boxes from seg read the newest fresh map, never nothing, on frames that skip seg
    assert all(seg is not None for seg in fed)
    assert all(seg is frames[2 * (i // 2)].dense.seg for i, seg in enumerate(fed))
    boxes_from_label_map(fed[1], IMAGE.shape[:2])
    # the overlay draws a reused map as a fresh one
    layers = Layers(skeleton=True, seg=True)
    np.testing.assert_array_equal(compose(frames[1], layers), compose(frames[1].replace(dense=frames[0].dense), layers))


def test_stages_on_the_cpu_with_a_budget_that_fits_run_seg_on_every_frame(task_models):
    clock = _Clock({"pose": 0.010, "seg": 0.010})
    predictor = _Timed(Predictor(task_models, input_hw=(128, 96)), clock)
    frames, _ = _run_stages(predictor, SegSchedule(every=None, fps=30), 8, clock)
    assert ["seg" in tasks for tasks in predictor.launched] == [True, False] + [True] * 6
    assert [f.dense.computed_on_of("seg") for f in frames] == [0, 0, 6, 9, 12, 15, 18, 21]


def test_seg_every_option_and_its_defaults():
    from realtime.build import Builder
    from realtime.cli import build_parser
    from realtime.mode import RunMode
    from realtime.options import RunOptions

    def schedule(argv, mode):
        args = build_parser().parse_args(["run", "clip.mp4", *argv])
        from realtime.cli import _model_options

        options = RunOptions(source="clip.mp4", models=_model_options(args))
        s = Builder(options)._seg_schedule(mode, 30.0)
        return type(s), s.every, s.MAX_GAP

    assert schedule([], RunMode.LIVE) == (SegSchedule, None, 2)  # every other frame when behind
    assert schedule([], RunMode.FILE)[1] == 1  # files: every frame
    assert schedule(["--seg-every", "auto"], RunMode.FILE)[1] is None
    assert schedule(["--seg-every", "3"], RunMode.LIVE)[1] == 3
    with pytest.raises(UserError, match="--seg-every 0 is neither"):
        schedule(["--seg-every", "0"], RunMode.LIVE)


def test_the_estimate_prices_seg_every_other_frame():
    """bench/gpu_estimate.py's row for `--seg-every 2` (what auto does while behind): half a seg
    forward's FLOPs, bytes and launches per frame beside the same configuration with seg on
    every frame."""
    from bench.gpu_estimate import CONFIGS, GPUS, estimate

    by_name = {c.name: c for c in CONFIGS}
    every = by_name["--sdpa cudnn --fp8"]
    halved = by_name["--sdpa cudnn --fp8 --seg-every 2"]
    for gpu in GPUS.values():
        pose = estimate(every, gpu, tasks=("pose",))
        a, b = estimate(every, gpu), estimate(halved, gpu)
        for kind, flop in a.flops.items():
            assert b.flops[kind] == pytest.approx(pose.flops.get(kind, 0.0) + (flop - pose.flops.get(kind, 0.0)) / 2)
        assert b.traffic_gb == pytest.approx(pose.traffic_gb + (a.traffic_gb - pose.traffic_gb) / 2)
        assert a.fps < b.fps < pose.fps


def test_the_egomotion_stage_asks_each_map_for_its_own_frame():
    """A frame with a fresh seg and a reused pointmap (or the reverse): the egomotion stage's person
    mask takes the seg only when the seg is this frame's, whatever `computed_on` (the oldest) says."""
    from realtime.frames import DenseMaps
    from realtime.stages.egomotion import person_mask

    image = np.zeros((100, 200, 3), np.uint8)
    person = Person(box=np.array([20, 10, 60, 90], np.float32))
    seg = np.zeros((50, 100), np.uint8)
    seg[5:20, 10:30] = 3
    points = np.zeros((50, 100, 3), np.float32)
    fresh_seg = DenseMaps(computed_on_each={"seg": 5, "pointmap": 2}, seg=seg, pointmap=points)
    reused_seg = DenseMaps(computed_on_each={"seg": 4, "pointmap": 5}, seg=seg, pointmap=points)
    assert fresh_seg.computed_on == 2 and reused_seg.computed_on == 4  # the oldest
    frame = Frame(index=5, timestamp=0.0, image=image, people=(person,))
    assert person_mask(frame.replace(dense=fresh_seg), (50, 100)).sum() == (seg > 0).sum()  # the seg itself
    boxes = person_mask(frame.replace(dense=reused_seg), (50, 100))
    assert boxes[25, 20] and boxes.sum() > (seg > 0).sum()  # the boxes stand in
