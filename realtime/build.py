"""One builder for every door: `sapiens-rt run`, `sapiens-rt batch` and `realtime.Session`.

    from realtime.build import Builder
    from realtime.options import ModelOptions, RunOptions

    builder = Builder(RunOptions(source="clip.mp4", models=ModelOptions(tasks=("pose",), device="cpu")))
    models = builder.load_models()                        # task -> module on builder.device
    finder = builder.box_finder(RunMode.FILE)             # person boxes
    stages = builder.analysis_stages(models, finder, RunMode.FILE, image_hw=(480, 640), fps=30.0)

`Builder(options)` checks every option first (`check_options`), so each door refuses the same
values with the same sentence, naming the option as that door's caller wrote it
(`realtime.options.Caller`: `--dense-every 0` from the CLI, `dense_every=0` from Python).
Then it builds, in the order a door needs them: the weights check, the models, the box
finder, the stages from detect to motion, and the tracks writer.
"""

from __future__ import annotations

import errno
import logging
import math
import numbers
import os
import re
import stat
import time
from pathlib import Path
from typing import Any, Optional, Sequence

import torch

from realtime import detect
from realtime import tasks as task_table
from realtime.errors import UserError
from realtime.infer import Predictor, default_device, default_dtype
from realtime.mode import RunMode
from realtime.models import compile_cache, hub, load_model
from realtime.models.archs import SIZES
from realtime.models.loading import cli_name, download_command, missing_weights
from realtime.options import CONTACT_DECIDERS, MAX_MOTION_LAG_MS, PYTHON, Caller, RunOptions

log = logging.getLogger(__name__)

DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
SMOOTHERS = ("one_euro", "kalman", "none")
CAMERAS = ("auto", "static", "moving")
# The names standard output goes by: `-`, and the device files that are it.
STDOUT_NAMES = ("-", "/dev/stdout", "/dev/fd/1", "/proc/self/fd/1")
MAX_INPUT_SIDE = 4096  # a network input side above this does not fit any GPU's memory at the batch sizes used
FIFO_WAIT_SECONDS = 10.0  # how long an output FIFO waits for a program to open it for reading


def parse_size(text: str, option: str = "--input-size") -> tuple[int, int]:
    """'1024x768' (height x width) -> (1024, 768); both multiples of 16."""
    try:
        h, w = (int(v) for v in str(text).lower().split("x"))
    except ValueError:
        raise UserError(f"{option} {text} is not HEIGHTxWIDTH; write it like 1024x768 or 512x384.") from None
    return _check_hw((h, w), f"{option} {text}")


def _check_hw(hw: tuple[int, int], given: str) -> tuple[int, int]:
    h, w = hw
    if not (32 <= h <= MAX_INPUT_SIDE and 32 <= w <= MAX_INPUT_SIDE) or h % 16 or w % 16:
        raise UserError(f"{given} must be from 32 to {MAX_INPUT_SIDE} and a multiple of 16 on both sides; try 1024x768, "
                        "512x384 or 256x192.")
    return int(h), int(w)


def is_stdout(path) -> bool:
    """Whether an output path names standard output (`-`, `/dev/stdout`, ...)."""
    return path is not None and str(path) in STDOUT_NAMES


def cuda_graphs_for(options: RunOptions, device: str) -> bool:
    """Whether the run replays CUDA graphs: `--cuda-graphs` / `--no-cuda-graphs`, else on when it runs
    on CUDA (every key is captured in the warm-up; what it gains and costs: docs/gpu-performance.md, bench/RESULTS.md)."""
    cuda_graphs = options.models.cuda_graphs
    return device.startswith("cuda") if cuda_graphs is None else bool(cuda_graphs)


def compile_for(options: RunOptions, device: str) -> bool:
    """Whether the run compiles its models: `--compile` / `--no-compile`, else on CUDA where torch can compile for it
    (`realtime.models.compile_cache.compiles_here`; measured fastest: bench/gpu_runs/, docs/gpu-performance.md)."""
    compile = options.models.compile
    if compile is not None:
        return bool(compile)
    from realtime.models.compile_cache import compiles_here

    return device.startswith("cuda") and compiles_here()


def check_device(device: Any, caller: Caller = PYTHON) -> str:
    """`cpu`, `cuda` or `cuda:N` (any case), one this machine has; None: cuda when there is one, else cpu."""
    if device is None:
        return default_device()
    name = str(device).strip().lower() if isinstance(device, (str, torch.device)) else None
    match = re.fullmatch(r"cuda(?::(\d+))?", name or "")
    if name == "cpu":
        return name
    if match is None:
        why = {"gpu": " (an NVIDIA GPU is cuda)", "mps": " (Apple's GPU, which this does not run on)"}.get(name or "", "")
        raise UserError(f"{caller.given('device', device)}{why} is not a device this runs on; use "
                        f"{caller.given('device', 'cuda')} for an NVIDIA GPU or {caller.given('device', 'cpu')}.")
    if not torch.cuda.is_available():
        raise UserError(f"{caller.given('device', device)} was asked for but PyTorch sees no CUDA GPU; install a CUDA build "
                        f"of torch or use {caller.given('device', 'cpu')}.")
    if match.group(1) is not None and int(match.group(1)) >= torch.cuda.device_count():
        count = torch.cuda.device_count()
        raise UserError(f"{caller.given('device', device)} names GPU {match.group(1)}, and this machine has {count} CUDA GPU"
                        f"{'s' if count > 1 else ''} (cuda:0 to cuda:{count - 1}); give one of those.")
    return name


def check_dtype(name: Optional[str], device: str, caller: Caller = PYTHON) -> torch.dtype:
    if name is None:
        return default_dtype(device)
    if name not in DTYPES:
        raise UserError(f"{caller.given('dtype', name)} is not a dtype; choose fp32, bf16 or fp16.")
    return DTYPES[name]


class _Checks:
    """One sentence per value a caller can get wrong, naming the option as the caller wrote it."""

    def __init__(self, caller: Caller):
        self.caller = caller

    def refuse(self, option: str, value: Any, what: str, example: Any) -> None:
        raise UserError(f"{self.caller.given(option, value)} is not {what}; give e.g. {self.caller.given(option, example)}.")

    def whole(self, option: str, value: Any, *, low: int = 1, example: Any = 3, none: bool = True) -> None:
        if value is None and none:
            return
        if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < low:
            self.refuse(option, value, f"a whole number of {low} or more", example)

    def number(self, option: str, value: Any, *, low: float, high: float = math.inf, low_ok: bool = True, example: Any,
               none: bool = False) -> None:
        if value is None and none:
            return
        ok = isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value)
        if not ok or value < low or (value == low and not low_ok) or value > high:
            what = (f"a number from {low:g} to {high:g}" if high < math.inf else
                    f"a number {'of' if low_ok else 'above'} {low:g}{' or more' if low_ok else ''}")
            self.refuse(option, value, what, example)

    def flag(self, option: str, value: Any, *, none: bool = False) -> None:
        if not (isinstance(value, bool) or (value is None and none)):
            raise UserError(f"{self.caller.given(option, value)} is not True or False; give {self.caller.name(option)} as "
                            f"a bool.")

    def choice(self, option: str, value: Any, choices: Sequence[str]) -> None:
        if value not in choices:
            raise UserError(f"{self.caller.given(option, value)} is not one of {', '.join(choices)}; choose one of those.")

    def hw(self, option: str, value: Any) -> Optional[tuple[int, int]]:
        """(H, W) from a pair of whole numbers or an "HxW" text; None stays None."""
        if value is None:
            return None
        pair: tuple = ()
        if isinstance(value, str):
            try:
                pair = tuple(int(v) for v in value.lower().split("x"))
            except ValueError:
                pass
        elif isinstance(value, (tuple, list)):
            pair = tuple(value)
        if len(pair) != 2 or any(isinstance(v, bool) or not isinstance(v, numbers.Integral) for v in pair):
            raise UserError(f"{self.caller.given(option, value)} is not a size; give (HEIGHT, WIDTH) in pixels, e.g. "
                            f"{self.caller.given(option, (512, 384))}.")
        return _check_hw(pair, self.caller.given(option, value))

    def path(self, option: str, value: Any) -> None:
        if value is not None and (not isinstance(value, (str, os.PathLike)) or not str(value).strip()):
            raise UserError(f"{self.caller.given(option, value)} is not a file name; give a path such as "
                            f"{self.caller.given(option, 'take.jsonl' if option == 'tracks' else 'overlay.mp4')}.")


def check_options(options: RunOptions, caller: Caller = PYTHON) -> RunOptions:
    """Every check of the options that needs no source and no model: one sentence (exit 2) for
    a value no run can honour, or one this machine or these tasks cannot. `run`, `batch` (before
    any worker starts) and `Session` all call it. Returns the options with canonical tasks and
    checkpoint names, the device in lower case, sizes as (H, W) and standard output as `-`."""
    check = _Checks(caller)
    src, m, people, smoothing, out, live = (options.input, options.models, options.people, options.smoothing,
                                            options.outputs, options.live_outputs)
    tasks = m.tasks.split(",") if isinstance(m.tasks, str) else m.tasks
    if not isinstance(tasks, (tuple, list)) or not all(isinstance(t, str) for t in tasks) or not any(t.strip() for t in tasks):
        raise UserError(f"{caller.given('tasks', m.tasks)} names no task; choose from {task_table.choices()}.")
    tasks = task_table.parse(",".join(tasks))
    if not isinstance(m.checkpoints, dict):
        example = "--checkpoint pose=FILE" if caller.cli else caller.given("checkpoints", {"pose": "pose.safetensors"})
        raise UserError(f"{caller.given('checkpoints', m.checkpoints)} is not task -> file; give e.g. {example}.")
    checkpoints = {task_table.get(str(t)).name: str(p) for t, p in m.checkpoints.items()}
    check.choice("size", m.size, SIZES)
    device = check_device(m.device, caller)
    check_dtype(m.dtype, device, caller)
    input_hw, pointmap_hw = check.hw("input_hw", m.input_hw), check.hw("pointmap_hw", m.pointmap_hw)
    if not isinstance(m.task_sizes, dict):
        raise UserError(f"{caller.given('task_sizes', m.task_sizes)} is not task -> (HEIGHT, WIDTH); give e.g. "
                        f"{caller.given('task_sizes', {'pose': (512, 384)})}.")
    task_sizes = {task_table.get(str(t)).name: check.hw("task_sizes", hw) for t, hw in m.task_sizes.items()}
    check.whole("dense_every", m.dense_every)
    check.whole("seg_every", m.seg_every)
    for name in ("dense_auto", "seg_auto", "flip_test", "dual_backbone", "fuse"):
        check.flag(name, getattr(m, name))
    check.flag("cuda_graphs", m.cuda_graphs, none=True)
    check.flag("compile", m.compile, none=True)
    if not isinstance(m.fp8, bool):
        check.choice("fp8", m.fp8, _fp8_scopes())
    check.choice("sdpa", m.sdpa, _sdpa_backends())
    check.choice("crop_sampling", m.crop_sampling, _crop_samplings())
    if m.fp8:
        from realtime.models.fp8 import check_fp8_compiled, check_fp8_device

        check_fp8_device(device)
        check_fp8_compiled(compile_for(options, device))
    if m.cuda_graphs and not device.startswith("cuda"):
        raise UserError(f"{caller.given('cuda_graphs', True)} needs a CUDA GPU, and this run is on {device}; drop "
                        f"{caller.name('cuda_graphs')} or use {caller.given('device', 'cuda')}.")

    check.choice("boxes_from", people.boxes_from, detect.BOX_SOURCES)
    check.whole("detect_every", people.detect_every)
    check.whole("max_people", people.max_people, example=1)
    if people.boxes_from == "seg" and not task_table.gives_body_parts(tasks):
        raise UserError(f"{caller.given('boxes_from', 'seg')} needs the segmentation task; add seg to {caller.name('tasks')}, "
                        f"or use {caller.given('boxes_from', 'detector')} or {caller.given('boxes_from', 'frame')}.")

    check.choice("smooth", smoothing.smooth, SMOOTHERS)
    check.number("smoothness", smoothing.smoothness, low=0.0, high=1.0, example=0.5)
    check.number("face_calibrate", smoothing.face_calibrate, low=0.0, low_ok=False, example=2.0)
    check.number("motion_lag", smoothing.motion_lag, low=0.0, high=MAX_MOTION_LAG_MS, example=100)
    check.choice("contacts", smoothing.contacts, CONTACT_DECIDERS)
    if smoothing.motion_lag > 0 and smoothing.contacts != "learned":
        raise UserError(f"{caller.given('motion_lag', smoothing.motion_lag)} lets the learned contact model see ahead, and "
                        f"contacts are decided by rules; add {caller.given('contacts', 'learned')}.")

    if not isinstance(src.webcam_size, (tuple, list)) or len(src.webcam_size) != 2:
        raise UserError(f"{caller.given('webcam_size', src.webcam_size)} is not (HEIGHT, WIDTH); give e.g. "
                        f"{caller.given('webcam_size', (720, 1280)) if not caller.cli else '--width 1280 --height 720'}.")
    for side in src.webcam_size:
        check.whole("webcam_size", side, example=720)
    check.number("webcam_fps", src.webcam_fps, low=0.0, low_ok=False, example=30, none=True)
    check.number("timeout", src.timeout, low=0.0, low_ok=False, example=10)
    check.whole("reconnects", src.reconnects, low=0, none=False)
    check.whole("max_frames", src.max_frames, example=100)
    check.whole("max_in_flight", src.max_in_flight, example=2)
    check.flag("stills", src.stills, none=True)
    check.choice("camera", src.camera, CAMERAS)
    if src.camera == "moving" and not task_table.gives_3d(tasks):
        raise UserError(f"{caller.given('camera', 'moving')} places people in a world tracked with the depth task, which "
                        f"{caller.name('tasks')} leaves out; add depth (e.g. {caller.given('tasks', 'pose,depth')}), or drop "
                        f"{caller.name('camera')}.")

    check.path("out", out.out)
    check.path("tracks", out.tracks)
    check.path("output_dir", out.output_dir)
    for name, example in (("out", "overlay.mp4"), ("tracks", "take.jsonl")):
        value = getattr(out, name)
        if isinstance(value, str) and value.endswith(("/", os.sep)):  # Path() would drop the slash and write a file there
            raise UserError(f"{caller.given(name, value)} ends in {value[-1]}, a folder; give a file name inside it, such as "
                            f"{caller.given(name, value + example)}.")
    for name in ("no_video", "progress", "caption"):
        check.flag(name, getattr(out, name))
    if is_stdout(out.out) and is_stdout(out.tracks):
        raise UserError(f"{caller.name('out')} and {caller.name('tracks')} both name standard output, which can carry one "
                        f"of them; send the other to a file.")
    if is_stdout(out.out) and os.isatty(1):
        raise UserError(f"{caller.given('out', out.out)} writes the video to standard output, which is a terminal here; "
                        f"redirect it (> overlay.mp4, or | ffplay -) or give a file name.")
    for name in ("view", "live_pace"):
        check.flag(name, getattr(live, name))
    for name in ("senders", "sinks"):
        if not isinstance(getattr(live, name), (list, tuple)):
            raise UserError(f"{caller.given(name, getattr(live, name))} is not a list; give a list, e.g. {caller.name(name)}=[].")
        odd = [part for part in getattr(live, name) if not (callable(getattr(part, "write", None))
                                                            and callable(getattr(part, "close", None)))]
        if odd:  # found now, not as an AttributeError at the first frame
            made = ", such as realtime.stages.live_senders(...) makes" if name == "senders" else ""
            raise UserError(f"{caller.name(name)}= holds {repr(odd[0])[:60]}, which has no write(frame) and close(); give "
                            f"objects with both{made}.")

    stdout = {"out": "-" if is_stdout(out.out) else out.out, "tracks": "-" if is_stdout(out.tracks) else out.tracks}
    return options.change(models={"tasks": tasks, "checkpoints": checkpoints, "device": device, "input_hw": input_hw,
                                  "pointmap_hw": pointmap_hw, "task_sizes": task_sizes},
                          outputs={k: str(v) if v is not None else None for k, v in stdout.items()})


def _fp8_scopes() -> tuple[str, ...]:
    from realtime.models.fp8 import CHOICES

    return CHOICES


def _sdpa_backends() -> tuple[str, ...]:
    from realtime.models.sapiens2 import SDPA_BACKENDS

    return SDPA_BACKENDS


def _crop_samplings() -> tuple[str, ...]:
    from realtime.transforms import CROP_SAMPLING

    return CROP_SAMPLING


class Builder:
    """Builds what a door runs from `RunOptions`, after checking them (`check_options`).

    options:  the checked options (canonical tasks, the device resolved).
    device:   "cpu", "cuda" or "cuda:N"; dtype: the models' torch dtype.
    caller:   how errors name the options (`realtime.options.CLI` or `PYTHON`).
    """

    def __init__(self, options: RunOptions, *, caller: Caller = PYTHON):
        self.caller = caller
        self.options = check_options(options, caller)
        self.device = self.options.models.device
        self.dtype = check_dtype(self.options.models.dtype, self.device, caller)

    def weight_files(self) -> list[str]:
        """The checkpoint files this run reads: inputs, which no output may overwrite."""
        models = self.options.models
        return [str(path) for path in (*models.checkpoints.values(), models.detector) if path is not None]

    def check_weights(self, *, models: bool, detector: bool) -> None:
        """Before anything is opened: when weights the run needs (`models`: the task models;
        `detector`: the person detector) are neither local nor downloadable now, say so for all
        of them at once, with the one command that fetches them."""
        m, name = self.options.models, self.caller.name
        for task, path in m.checkpoints.items() if models else ():
            if not Path(path).expanduser().is_file():
                given = (f"--checkpoint {cli_name(task)}=..." if self.caller.cli else
                         f'{name("checkpoints")}={{"{cli_name(task)}": ...}}')
                raise UserError(f"Checkpoint {path} does not exist; check the path given with {given}, "
                                f"or leave that task out of it to use the released weights.")
        wanted = [t for t in m.tasks if t not in m.checkpoints] if models else []
        wanted += ["detector"] if detector else []
        missing = missing_weights(wanted, m.size) if wanted else []
        if not missing or hub.hub_reachable():
            return  # all here, or they download as they load
        files = ", ".join(where for _, where in missing)
        command = download_command([task for task, _ in missing], m.size)
        if self.caller.cli:
            pass_them = "--checkpoint TASK=PATH"
            others = " (or --detector PATH, or --boxes-from seg or --boxes-from frame instead of the detector)"
        else:
            pass_them = f'{name("checkpoints")}={{"TASK": PATH}}'
            others = f' (or {name("detector")}=PATH, or {name("boxes_from")}="seg" or "frame" instead of the detector)'
        others = others if detector and missing[-1][0] == "detector" else ""
        many = len(missing) > 1
        raise UserError(f"This run needs {len(missing)} weight file{'s' if many else ''} that {'are' if many else 'is'} "
                        f"not on this machine, and the hub cannot be reached (offline): {files}; run `{command}` on a "
                        f"machine with internet access to fetch {'them all' if many else 'it'}, or set "
                        f"${hub.CHECKPOINT_ROOT_ENV}, or pass {pass_them}{others}.")

    def needs_detector(self, box_finder_given: bool) -> bool:
        """Whether the released detector's weights are needed (no box finder given, no file of one's own)."""
        people = self.options.people
        return not box_finder_given and people.boxes_from == "detector" and self.options.models.detector is None

    def load_models(self) -> dict:
        """task -> the model on the device (`--compile`: the Predictor compiles them, every bucket warmed)."""
        m = self.options.models
        models = {}
        for task in m.tasks:
            arch = None if task in m.checkpoints else f"sapiens2_{m.size}"
            models[task] = load_model(task, m.checkpoints.get(task), arch=arch, device=self.device, dtype=self.dtype)
        return models

    def box_finder(self, mode: RunMode, detector=None) -> detect.BoxFinder:
        """Person boxes as the options say. Stills are detected one by one (no boxes carried from
        the previous image). `detector`: one already loaded (a batch worker's, shared by its videos)."""
        people = self.options.people
        every = (people.detect_every or detect.default_detect_every(mode is RunMode.LIVE)) if mode.follows_people else 1
        if detector is not None:
            return detect.BoxFinder(people.boxes_from, detector, detect_every=every, max_people=people.max_people)
        return detect.make_box_finder(boxes_from=people.boxes_from, detector_checkpoint=self.options.models.detector,
                                      device=self.device, detect_every=every, max_people=people.max_people,
                                      half=self.device.startswith("cuda"), cuda_graphs=cuda_graphs_for(self.options, self.device))

    def analysis_stages(self, models: dict, box_finder, mode: RunMode, image_hw: tuple[int, int],
                        fps: Optional[float]) -> list:
        """Every stage that turns a picture into people, in order: detect, infer (launch, collect),
        smooth, then face, egomotion, ground, world and motion as the tasks allow; the models are
        warmed up for `image_hw` (H, W) here."""
        from realtime.stages import DetectStage, Feedback, SmoothStage, inference_stages
        from trackers.identity import IdentityTracker
        from trackers.live import LiveSmoother

        m, smoothing = self.options.models, self.options.smoothing
        feedback = Feedback()
        predictor = Predictor(models, device=self.device, dtype=self.dtype, input_hw=m.input_hw,
                              sizes={**({"pointmap": m.pointmap_hw} if m.pointmap_hw else {}), **m.task_sizes},
                              flip_test=m.flip_test, compile=compile_for(self.options, self.device),
                              compile_cache=compile_cache.default_folder(),
                              cuda_graphs=cuda_graphs_for(self.options, self.device), crop_sampling=m.crop_sampling,
                              fp8=m.fp8, sdpa=m.sdpa, dual=m.dual_backbone, fuse=m.fuse)
        predictor.warm_up(image_hw)  # before any output exists: a failure here leaves no files
        if hasattr(box_finder, "warm_up"):
            box_finder.warm_up(image_hw)  # the detector's CUDA graph too: no capture mid-run
        smoother = None
        if smoothing.smooth != "none" and task_table.gives_keypoints(models) and mode.follows_people:
            smoother = LiveSmoother(method=smoothing.smooth, smoothness=smoothing.smoothness)
        return [DetectStage(box_finder, feedback),
                *inference_stages(predictor, feedback, schedule=self._dense_schedule(mode, fps),  # launch, then collect
                                  seg_schedule=self._seg_schedule(mode, fps)),
                SmoothStage(IdentityTracker() if mode.follows_people else None, smoother, feedback),
                *self.motion_stages(models, mode)]

    def motion_stages(self, models, mode: RunMode) -> list:
        """The stages between smooth and the live senders, as the tasks allow: face (pose), egomotion
        (pose + depth: the camera's pose, `camera`), ground (pose + depth: 3D at pose rate, contacts),
        world (pose + depth: the camera in the world, heights, world contacts once the camera moves) and
        motion (pose + depth: filtered 3D, bones)."""
        from realtime.data import keypoint_names
        from realtime.stages import EgomotionStage, FaceStage, GroundStage, MotionStage, WorldStage

        if not task_table.gives_keypoints(models) or not mode.follows_people:
            return []
        names = keypoint_names()
        smoothing, camera = self.options.smoothing, self.options.input.camera
        stages: list = [FaceStage(names, calibrate_seconds=smoothing.face_calibrate)]
        if task_table.gives_3d(models):
            fingers = any(getattr(s, "fingers", False) for s in self.options.live_outputs.senders)  # what VMC senders send
            # egomotion before ground: the lifter holds planted feet in the world when the camera moves
            ground = GroundStage(names, contacts=smoothing.contacts, lag=smoothing.motion_lag / 1000.0)
            stages += [EgomotionStage(camera=camera), ground,
                       WorldStage(names, camera=camera, contacts=smoothing.contacts, contact_model=ground.contact_model),
                       MotionStage(names, fingers=fingers, smooth=smoothing.smooth, smoothness=smoothing.smoothness)]
        return stages

    def _dense_schedule(self, mode: RunMode, fps: Optional[float]):
        from realtime.stages import DenseSchedule

        m = self.options.models
        if m.dense_every is not None and not m.dense_auto:
            return DenseSchedule(every=m.dense_every, fps=fps)
        return DenseSchedule(every=None if m.dense_auto or mode.adaptive_dense else 1, fps=fps)

    def _seg_schedule(self, mode: RunMode, fps: Optional[float]):
        """Seg every frame, or, on live sources (or `--seg-every auto`), every other frame while
        the run is behind the source's frame rate (as the dense schedule measures it)."""
        from realtime.stages import SegSchedule

        m = self.options.models
        if m.seg_every is not None and not m.seg_auto:
            return SegSchedule(every=m.seg_every, fps=fps)
        return SegSchedule(every=None if m.seg_auto or mode.adaptive_dense else 1, fps=fps)

    def model_card(self, models: dict, input_hw: tuple[int, int]) -> dict:
        """What the tracks header says of the models and how they ran."""
        return {
            "tasks": sorted(models),
            "arch": {task: getattr(m, "arch", None) for task, m in models.items()},
            "input_size": list(input_hw),
            "device": self.device,
            "dtype": str(self.dtype).replace("torch.", ""),
            "flip_test": self.options.models.flip_test,
            "boxes_from": self.options.people.boxes_from,
            "smoothing": self.options.smoothing.smooth,
        }

    def track_writer(self, path: str, models: dict, stages: list, *, image_wh: tuple[int, int], fps: Optional[float],
                     source: str, mode: RunMode, stills=None):
        """The tracks writer of a run over `stages` (its header names the models, the network input
        size and the bones the motion stage solves)."""
        from realtime.data import keypoint_names
        from realtime.sinks.tracks import TrackWriter
        from realtime.stages import InferStage, MotionStage

        predictor = next(stage.predictor for stage in stages if isinstance(stage, InferStage))
        bone_names = next((stage.bone_names for stage in stages if isinstance(stage, MotionStage)), None)
        return TrackWriter(path, keypoint_names=keypoint_names(), image_wh=image_wh, fps=fps or 30.0, source=source,
                           model=self.model_card(models, predictor.input_hw), stills=stills, tracked=mode.follows_people,
                           bone_names=bone_names)


def model_label(models: dict) -> str:
    """The loaded models as the status line and caption name them: 'pose+seg sapiens2_0.4b',
    or per task when their archs differ ('pose sapiens2_1b, seg sapiens2_0.4b')."""
    archs = {task: getattr(model, "arch", None) or type(model).__name__ for task, model in models.items()}
    if len(set(archs.values())) == 1:
        return f"{'+'.join(archs)} {next(iter(archs.values()))}"
    return ", ".join(f"{task} {arch}" for task, arch in archs.items())


def caption(models: dict, device: str):
    """The fps / latency / model line drawn on the overlay, from a metrics snapshot."""
    label = model_label(models)

    def line(snap: dict) -> str:
        text = f"{snap.get('fps', 0):.1f} fps"
        if "latency_ms" in snap:
            text += f" | latency {snap['latency_ms']:.0f} ms"
        if snap.get("dropped"):
            text += f" | dropped {int(snap['dropped'])}"
        return f"{text} | {label} {device}"
    return line


def layers(models: dict):
    """What the overlay draws for these models."""
    from viz.compose import Layers

    rows = task_table.ordered(models)
    return Layers(skeleton=task_table.gives_keypoints(models), seg=task_table.gives_body_parts(models),
                  panes=("overlay",) + tuple(t.pane for t in rows if t.pane))




class OutputFiles:
    """The output files of a run or a Session (kind "video" / "tracks" -> path, `-` for standard
    output), from before the models load until the writers have them.

    Made: each is checked (not an input, not another output, a writable place) and its missing
    folders are made. `hold()`: the files are locked (a second run writing them is refused) and
    each FIFO waits for its reader (`FIFO_WAIT_SECONDS`). `release(failed=True)`: what was made
    for nothing is removed again.
    """

    def __init__(self, outputs: dict[str, str], inputs, caller: Caller = PYTHON):
        from realtime.outputs import OutputLocks

        self.outputs = dict(outputs)
        self.caller = caller
        self.files = {kind: path for kind, path in outputs.items() if not is_stream(path)}  # pipes are written, not kept
        self.created: list[Path] = []
        self.readers: list[int] = []
        self.locks = OutputLocks()
        self.check_inputs(inputs)
        try:
            for path in self.files.values():
                self._make_parent(Path(path))
        except BaseException:
            self.release(failed=True)  # the folders made for the outputs before the one refused
            raise

    def check_inputs(self, inputs) -> None:
        """None of the outputs is one of `inputs` or another output (one sentence naming the option as the caller does)."""
        from realtime.outputs import check_outputs

        names = {kind: "out" if kind == "video" else kind for kind in self.files}  # --out, --tracks; the out= file, ...
        check_outputs({self.caller.name(name) if self.caller.cli else f"the {name}= file": self.files[kind]
                       for kind, name in names.items()}, inputs)

    def hold(self) -> None:
        self.locks.acquire(self.files)
        self.readers = self._wait_for_readers({kind: path for kind, path in self.outputs.items() if is_fifo(path)})

    def writers_opened(self) -> None:
        """The writers have opened their FIFOs: the descriptors that held them open go."""
        while self.readers:
            os.close(self.readers.pop())

    def release(self, failed: bool = False) -> None:
        self.writers_opened()
        self.locks.release()  # removes output files it created that are still empty
        if failed:
            for folder in reversed(self.created):
                try:
                    folder.rmdir()
                except OSError:  # not empty: something was written there after all
                    pass

    def _make_parent(self, path: Path) -> None:
        """Create the folders for `path` and check it can be written, before any work is done."""
        if path.is_dir():
            raise UserError(f"Output {path} is a folder; give a file name inside it instead.")
        missing = [p for p in [path.parent, *path.parent.parents] if not p.exists()]
        try:
            for folder in reversed(missing):
                folder.mkdir()
                self.created.append(folder)
        except OSError as err:
            raise UserError(f"Cannot create the folder {folder} ({err.strerror}); choose a writable output path.") from None
        if not os.access(path.parent, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
            raise UserError(f"Cannot write {path} (permission denied); choose a writable output path.")

    def _wait_for_readers(self, fifos: dict[str, str]) -> list[int]:
        """Wait until a program opens each output FIFO for reading, at most `FIFO_WAIT_SECONDS` for all; the
        returned descriptors hold each FIFO open until its writer has opened it, so a reader does
        not see the end of it in between. No reader in time: one sentence."""
        held: list[int] = []
        seconds = FIFO_WAIT_SECONDS
        deadline = time.monotonic() + seconds
        try:
            for kind, path in fifos.items():
                log.info("waiting for a program to read the FIFO %s", path)
                while True:
                    try:
                        held.append(os.open(path, os.O_WRONLY | os.O_NONBLOCK))  # ENXIO while no one reads
                        break
                    except OSError as err:
                        if err.errno != errno.ENXIO:
                            raise UserError(f"Cannot open the FIFO {path} ({err.strerror}); choose a writable output "
                                            f"path.") from None
                    if time.monotonic() >= deadline:
                        option = self.caller.name("out" if kind == "video" else "tracks")
                        raise UserError(f"No program opened the FIFO {path} ({option}) for reading within {seconds:g} s; "
                                        f"start its reader first (e.g. cat {path} > take.jsonl), then the run.")
                    time.sleep(0.05)
        except BaseException:
            for fd in held:
                os.close(fd)
            raise
        return held


def is_stream(path: str) -> bool:
    """'-' (standard output) or an existing FIFO or character device: written as a stream,
    never locked, checked for room or removed."""
    if path == "-":
        return True
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISCHR(mode)


def is_fifo(path: str) -> bool:
    try:
        return stat.S_ISFIFO(os.stat(path).st_mode)
    except OSError:
        return False
