"""`sapiens-rt run`: build a pipeline from options and run it.

This is the one place that knows every piece: it opens the source, loads
the models, builds the stages and sinks, installs the Ctrl+C handler, runs,
and returns the summary. Library users can call `run(RunOptions(...))`, or
pass ready-made models (tests and benchmarks use tiny or random-weight ones).
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import signal
import stat
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

import torch
from tqdm import tqdm

from realtime import tasks as task_table
from realtime.data import keypoint_names
from realtime.detect import default_detect_every, make_box_finder
from realtime.errors import Terminated, UserError
from realtime.infer import Predictor, default_device, default_dtype
from realtime.metrics import Metrics
from realtime.mode import RunMode, decide_mode
from realtime.models import compile_cache, hub, load_model
from realtime.models.loading import cli_name, download_command, missing_weights
from realtime.options import RunOptions
from realtime.outputs import OutputLocks, check_outputs
from realtime.pipeline import Pipeline, RunResult
from realtime.sinks.base import LatestWins, ProgressSink, VideoSink, ViewerSink
from realtime.sinks.tracks import TrackWriter
from realtime.sinks.video import VideoWriter
from realtime.sources import Source, SourceInfo, open_source
from realtime.stages import (
    DenseSchedule,
    DetectStage,
    EgomotionStage,
    FaceStage,
    Feedback,
    GroundStage,
    InferStage,
    LiveStage,
    MotionStage,
    RenderStage,
    SegSchedule,
    SmoothStage,
    WorldStage,
    WriteStage,
    inference_stages,
)
from trackers.identity import IdentityTracker
from trackers.live import LiveSmoother
from viz.compose import Layers

log = logging.getLogger(__name__)

DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
LIVE_MAX_IN_FLIGHT = 3  # frames inside the stages at once on cameras and streams: 3 keeps the GPU fed (docs/gpu-performance.md)
# On a CPU the model's work is done when the infer stage returns, so a second frame inside would only
# wait in front of the model (25-35 ms of glass-to-datagram on a loaded 2-core machine, bench/latency.py).
LIVE_MAX_IN_FLIGHT_CPU = 1


@dataclass
class RunSummary:
    result: RunResult
    lines: list[str]  # the summary printed at the end
    outputs: dict[str, str]  # kind ("video", "tracks") -> path
    stats: dict[str, float]  # the final metrics snapshot (fps, latency_ms, stage.<name>_ms, ...)


def parse_tasks(text: str) -> tuple[str, ...]:
    """'pose,seg,depth' -> ('pose', 'seg', 'pointmap'); unknown names are a user error."""
    return task_table.parse(text)


def parse_size(text: str, option: str = "--input-size") -> tuple[int, int]:
    """'1024x768' (height x width) -> (1024, 768); both multiples of 16."""
    try:
        h, w = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise UserError(f"{option} {text} is not HEIGHTxWIDTH; write it like 1024x768 or 512x384.") from None
    if h < 32 or w < 32 or h % 16 or w % 16:
        raise UserError(f"{option} {text} must be at least 32x32 and a multiple of 16 on both sides; try 1024x768, 512x384 "
                        "or 256x192.")
    return h, w


def cuda_graphs_for(options: RunOptions, device: str) -> bool:
    """Whether the run replays CUDA graphs: `--cuda-graphs` / `--no-cuda-graphs`, else on when it runs
    on CUDA (every key is captured in the warm-up; on an H200, 36 against 30 fps for one person and
    the detector 3.7 against 10-15 ms a call, for about 4 GiB more GPU memory reserved)."""
    return device.startswith("cuda") if options.cuda_graphs is None else bool(options.cuda_graphs)


def compile_for(options: RunOptions, device: str) -> bool:
    """Whether the run compiles its models: `--compile` / `--no-compile`, else on CUDA where torch can compile for it
    (`realtime.models.compile_cache.compiles_here`; measured fastest: bench/gpu_runs/, docs/gpu-performance.md)."""
    if options.compile is not None:
        return bool(options.compile)
    from realtime.models.compile_cache import compiles_here

    return device.startswith("cuda") and compiles_here()


def check_options(options: RunOptions) -> tuple[str, torch.dtype, RunOptions]:
    """The checks of the options that need no source and no model: one sentence (exit 2) for
    an option this machine or these tasks cannot honour. `run` and `batch` (before any worker
    starts) both call it. Returns the device, the dtype and the options with canonical tasks."""
    device = options.device or default_device()
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise UserError("--device cuda was asked for but PyTorch sees no CUDA GPU; install a CUDA build of torch or use "
                        "--device cpu.")
    dtype = _dtype(options.dtype, device)
    if options.fp8:
        from realtime.models.fp8 import check_fp8_compiled, check_fp8_device

        check_fp8_device(device)
        check_fp8_compiled(compile_for(options, device))
    if options.cuda_graphs and not device.startswith("cuda"):
        raise UserError(f"--cuda-graphs needs a CUDA GPU, and this run is on {device}; drop --cuda-graphs or use --device cuda.")
    if options.max_frames is not None and options.max_frames < 1:
        raise UserError(f"--max-frames {options.max_frames} is not a whole number of 1 or more; give e.g. --max-frames 100.")
    options = dataclasses.replace(options, tasks=task_table.parse(",".join(options.tasks)),
                                  checkpoints={task_table.get(t).name: p for t, p in options.checkpoints.items()})
    if options.boxes_from == "seg" and not task_table.gives_body_parts(options.tasks):
        raise UserError("--boxes-from seg needs the segmentation task; add seg to --tasks, or use --boxes-from detector or "
                        "frame.")

    return device, dtype, options


def run(options: RunOptions, *, models: Optional[dict] = None, box_finder: Optional[Callable] = None,
        source: Optional[Source] = None) -> RunSummary:
    """Run the whole pipeline. `models` (task -> module on the device), `box_finder` and
    `source` (not yet opened) replace what `options` would load or open, for tests and benchmarks."""
    device, dtype, options = check_options(options)
    if options.view:
        from viz.viewer import check_display  # Qt is imported only for --view

        check_display()  # before anything is opened or written: a broken Qt would abort the process
    if source is None:
        source = open_source(options.source, width=options.webcam_size[1], height=options.webcam_size[0],
                             fps=options.webcam_fps, timeout=options.timeout, reconnects=options.reconnects)
    info = source.open()
    created: list[Path] = []
    locks = OutputLocks()
    try:
        mode = decide_mode(source, info, stills=options.stills, boxes_from=options.boxes_from)
        if options.detect_every is None:
            options = dataclasses.replace(options, detect_every=default_detect_every(mode is RunMode.LIVE))
        outputs = _output_paths(options, info)
        files = {kind: path for kind, path in outputs.items() if not is_stream(path)}  # pipes are written, not kept
        check_outputs(files, source.input_files())
        for path in files.values():
            _make_parent(Path(path), created)
        needs_detector = box_finder is None and options.boxes_from == "detector" and options.detector is None
        _check_weights_present(options, models is None, needs_detector)
        locks.acquire(files)  # a second run writing the same files is refused here
        if models is None:
            log.info("loading models")
            models = _load_models(options, device, dtype)
        if box_finder is None:
            box_finder = _box_finder(options, device, mode)
        return _run_pipeline(options, mode, source, info, models, box_finder, device, dtype, outputs)
    except BaseException:
        locks.release()  # removes output files it created that are still empty
        _remove_empty(created)
        raise
    finally:
        locks.release()
        source.close()


def _run_pipeline(options: RunOptions, mode: RunMode, source: Source, info: SourceInfo, models, box_finder, device, dtype,
                  outputs) -> RunSummary:
    metrics = Metrics()
    log.info("warming up")
    people_stages = analysis_stages(options, models, box_finder, mode, device, dtype, (info.height, info.width), info.fps)
    predictor = next(stage.predictor for stage in people_stages if isinstance(stage, InferStage))
    rows = task_table.ordered(models)
    layers = Layers(skeleton=task_table.gives_keypoints(models), seg=task_table.gives_body_parts(models),
                    panes=("overlay",) + tuple(t.pane for t in rows if t.pane))

    bone_names = next((stage.bone_names for stage in people_stages if isinstance(stage, MotionStage)), None)
    viewer = None
    sinks: list = []  # in the order they get each frame
    extra = [LatestWins(s) if mode is RunMode.LIVE else s for s in options.sinks]  # live: a slow sink must not stall the run
    shares_cores = _shares_cores_with_senders(options, device, mode, outputs)  # live senders beside drawing, on a CPU
    try:
        if "tracks" in outputs:
            sinks.append(TrackWriter(outputs["tracks"], keypoint_names=keypoint_names(), image_wh=(info.width, info.height),
                                     fps=info.fps or 30.0, source=info.uri,
                                     model=_model_card(options, models, device, dtype, predictor.input_hw),
                                     stills=source.frame_file if mode is RunMode.STILLS else None, tracked=mode.follows_people,
                                     bone_names=bone_names))
        if "video" in outputs:
            # beside live senders on a CPU the encoder takes one thread: it has the core the model leaves it
            sinks.append(VideoSink(VideoWriter(outputs["video"], fps=info.fps or 30.0, audio_from=info.audio_path,
                                               threads=1 if shares_cores else None)))
        write = WriteStage()
        stages = list(people_stages)
        live = None
        if options.senders:  # the avatar first: sent here, before anything is drawn, encoded or written
            live = LiveStage(options.senders, pace=options.live_pace and mode is RunMode.FILE)
            live.period = 1.0 / (info.fps or 30.0)
            stages.append(live)
        if options.view or "video" in outputs:
            stages.append(RenderStage(layers, metrics, _caption(models, device) if options.caption else (lambda snap: None)))
        if options.view:
            viewer = _viewer(options, info, device, layers, write, outputs, models)
            sinks.append(ViewerSink(viewer, metrics))
        sinks += extra
        if options.progress and mode.shows_progress:
            sinks.append(ProgressSink(tqdm(total=options.max_frames or info.frame_count, unit="frame", desc=info.name,
                                           dynamic_ncols=True)))
        write.sinks = sinks
        stages.append(write)
        # Live sources: few frames in flight, so what is shown is close to now (stale ones drop at the gate).
        live_in_flight = LIVE_MAX_IN_FLIGHT_CPU if device == "cpu" else LIVE_MAX_IN_FLIGHT
        in_flight = options.max_in_flight or (live_in_flight if mode is RunMode.LIVE else None)
        pipeline = Pipeline(source, stages, metrics=metrics, max_frames=options.max_frames, max_in_flight=in_flight, mode=mode,
                            release_after=live.name if live is not None else None)
        if live is not None:
            live.wait = pipeline.stop_event.wait  # pacing ends at once when the run stops
        log.info("running")
        with _stop_on_signals(pipeline), _model_threads(_threads_beside_drawing(shares_cores)):
            result = pipeline.run(_viewer_loop(viewer, pipeline) if viewer is not None else None)
    except BaseException:  # e.g. Ctrl+C before the stages ran: close (and drop) what was opened
        for sink in sinks + [s for s in extra if s not in sinks] + list(options.senders):
            sink.close()
        tracks = next((s for s in sinks if isinstance(s, TrackWriter)), None)
        if tracks is not None and tracks.frames_written == 0 and not is_stream(outputs["tracks"]):
            Path(outputs["tracks"]).unlink(missing_ok=True)  # a header without frames is nothing worth keeping
        raise
    lines = [result.message] + metrics.summary() + [_boxes_line(box_finder, options)] + _sink_lines(extra)
    lines += predictor.graph_report() + (box_finder.graph_report() if hasattr(box_finder, "graph_report") else [])
    lines += live.summary_lines() if live is not None else []
    lines += [line for stage in people_stages if isinstance(stage, WorldStage) for line in stage.summary_lines()]
    if pipeline.behind_skipped:
        lines.append(f"the picture, video and tracks skipped {pipeline.behind_skipped} frames that the live senders sent "
                     f"(drawing and writing were slower than the source)")
    lines += [f"{kind}: {path}" for kind, path in outputs.items()]
    return RunSummary(result=result, lines=lines, outputs=outputs, stats=metrics.snapshot())


def _shares_cores_with_senders(options: RunOptions, device: str, mode: RunMode, outputs: dict) -> bool:
    """A live CPU run whose senders share the cores with drawing (the viewer, the overlay video)."""
    draws = options.view or "video" in outputs
    return device == "cpu" and mode is RunMode.LIVE and bool(options.senders) and draws


def _threads_beside_drawing(shares_cores: bool) -> Optional[int]:
    """The model's CPU threads when the live senders share the cores with drawing and encoding
    (`_shares_cores_with_senders`): one core fewer than all, or None to leave them be. A parallel op
    waits for its slowest thread, so an encoder thread on one of the model's cores delays every op,
    not only its own share (bench/latency.py, RESULTS "Glass to datagram")."""
    threads = torch.get_num_threads()
    if not shares_cores or threads < 2:
        return None
    log.info("live run on a CPU: the model uses %d of %d threads, one core is left to the picture", threads - 1, threads)
    return threads - 1


@contextlib.contextmanager
def _model_threads(count: Optional[int]):
    """torch's intra-op threads set to `count` for the block (None: unchanged), restored after."""
    before = torch.get_num_threads()
    if count is not None:
        torch.set_num_threads(count)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def analysis_stages(options: RunOptions, models: dict, box_finder, mode: RunMode, device: str, dtype: torch.dtype,
                    image_hw: tuple[int, int], fps: Optional[float]) -> list:
    """Every stage that turns a picture into people, in order: detect, infer (launch, collect),
    smooth, then face, ground and motion as the tasks allow. `sapiens-rt run`, `batch` and
    `realtime.Session` all use these; the models are warmed up for `image_hw` (H, W) here."""
    feedback = Feedback()
    predictor = Predictor(models, device=device, dtype=dtype, input_hw=options.input_hw,
                          sizes={**({"pointmap": options.pointmap_hw} if options.pointmap_hw else {}), **options.task_sizes},
                          flip_test=options.flip_test,
                          compile=compile_for(options, device), cuda_graphs=cuda_graphs_for(options, device),
                          compile_cache=compile_cache.default_folder(),
                          crop_sampling=options.crop_sampling,
                          fp8=options.fp8, sdpa=options.sdpa, dual=options.dual_backbone, fuse=options.fuse)
    predictor.warm_up(image_hw)  # before any output exists: a failure here leaves no files
    if hasattr(box_finder, "warm_up"):
        box_finder.warm_up(image_hw)  # the detector's CUDA graph too: no capture mid-run
    smoother = None
    if options.smooth != "none" and task_table.gives_keypoints(models) and mode.follows_people:
        smoother = LiveSmoother(method=options.smooth, smoothness=options.smoothness)
    return [DetectStage(box_finder, feedback),
            *inference_stages(predictor, feedback, schedule=_dense_schedule(options, mode, fps),  # launch, then collect
                              seg_schedule=_seg_schedule(options, mode, fps)),
            SmoothStage(IdentityTracker() if mode.follows_people else None, smoother, feedback),
            *motion_stages(options, models, mode)]


def motion_stages(options: RunOptions, models, mode: RunMode) -> list:
    """The stages between smooth and the live senders, as the tasks allow: face (pose), egomotion
    (pose + depth: the camera's pose, `--camera`), ground (pose + depth: 3D at pose rate, contacts),
    world (pose + depth: the camera in the world, heights, world contacts once the camera moves) and
    motion (pose + depth: filtered 3D, bones)."""
    if not task_table.gives_keypoints(models) or not mode.follows_people:
        return []
    names = keypoint_names()
    stages: list = [FaceStage(names, calibrate_seconds=options.face_calibrate)]
    if task_table.gives_3d(models):
        fingers = any(getattr(s, "fingers", False) for s in options.senders)  # what the VMC senders send
        # egomotion before ground: the lifter holds planted feet in the world when the camera moves
        stages += [EgomotionStage(camera=options.camera), GroundStage(names), WorldStage(names, camera=options.camera),
                   MotionStage(names, fingers=fingers, smooth=options.smooth, smoothness=options.smoothness)]
    return stages


def _sink_lines(sinks) -> list[str]:
    """What live mode's latest-wins outputs dropped or why they stopped, and what live senders sent."""
    lines = []
    for sink in sinks:
        inner = getattr(sink, "sink", sink)  # LatestWins wraps the sink
        if hasattr(inner, "summary_lines"):
            lines += inner.summary_lines()
        if getattr(sink, "errors", None):
            lines.append(f"output {sink.name} stopped after {sink.written} frames: {sink.errors[0]}")
        elif getattr(sink, "dropped", 0):
            lines.append(f"output {sink.name}: {sink.dropped} frames skipped (it was slower than the source)")
    return lines


def _dense_schedule(options: RunOptions, mode: RunMode, fps: Optional[float]):
    if options.dense_every is not None and not options.dense_auto:
        return DenseSchedule(every=options.dense_every, fps=fps)
    adaptive = options.dense_auto or mode.adaptive_dense
    return DenseSchedule(every=None if adaptive else 1, fps=fps)


def _seg_schedule(options: RunOptions, mode: RunMode, fps: Optional[float]) -> SegSchedule:
    """Seg every frame, or, on live sources (or `--seg-every auto`), every other frame while
    the run is behind the source's frame rate (as the dense schedule measures it)."""
    if options.seg_every is not None and not options.seg_auto:
        return SegSchedule(every=options.seg_every, fps=fps)
    return SegSchedule(every=None if options.seg_auto or mode.adaptive_dense else 1, fps=fps)


def _viewer_loop(viewer, pipeline: Pipeline) -> Callable[[threading.Event], None]:
    """The main thread's loop while the stages run: the viewer's, until its window closes."""
    def loop(stop: threading.Event) -> None:
        viewer.run(stop)  # returns when the window closes or the run stops
        if not pipeline.finished.is_set():
            pipeline.stop("window closed")  # no effect if the run had already stopped
    return loop


def _boxes_line(box_finder, options: RunOptions) -> str:
    counts = getattr(box_finder, "sources", None)
    if counts:
        return "boxes from: " + ", ".join(f"{source} {n} frames" for source, n in counts.most_common())
    return f"boxes from: {options.boxes_from}"


def _dtype(name: Optional[str], device: str) -> torch.dtype:
    if name is None:
        return default_dtype(device)
    if name not in DTYPES:
        raise UserError(f"Unknown --dtype {name}; choose fp32, bf16 or fp16.")
    return DTYPES[name]


def _output_paths(options: RunOptions, info: SourceInfo) -> dict[str, str]:
    """Explicit --out/--tracks, else a fresh folder recordings/<source>-<time>/."""
    outputs = {}
    folder = None
    if options.out is None or options.tracks is None:
        folder = Path(options.output_dir) / f"{info.name}-{time.strftime('%Y%m%d-%H%M%S')}"
    if not options.no_video:
        outputs["video"] = options.out or str(folder / "overlay.mp4")
    outputs["tracks"] = options.tracks or str(folder / "tracks.jsonl")
    return outputs


def is_stream(path: str) -> bool:
    """'-' (standard output) or an existing FIFO or character device: written as a stream of lines,
    never locked, checked for room or removed."""
    if path == "-":
        return True
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISCHR(mode)


def _make_parent(path: Path, created: list[Path]) -> None:
    """Create the folders for `path` (recording them in `created`) and check it can be
    written, before any work is done."""
    if path.is_dir():
        raise UserError(f"Output {path} is a folder; give a file name inside it instead.")
    missing = [p for p in [path.parent, *path.parent.parents] if not p.exists()]
    try:
        for folder in reversed(missing):
            folder.mkdir()
            created.append(folder)
    except OSError as err:
        raise UserError(f"Cannot create the folder {folder} ({err.strerror}); choose a writable output path.") from None
    if not os.access(path.parent, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
        raise UserError(f"Cannot write {path} (permission denied); choose a writable output path.")


def _remove_empty(folders: list[Path]) -> None:
    """Undo `_make_parent` after a run that failed before writing anything."""
    for folder in reversed(folders):
        try:
            folder.rmdir()
        except OSError:  # not empty: something was written there after all
            pass


def _check_weights_present(options: RunOptions, models: bool, detector: bool, *, python: bool = False) -> None:
    """Before anything is opened: when weights the run needs are neither local nor
    downloadable now, say so for all of them at once, with the one command that fetches them.
    python: the messages name the Python arguments (`realtime.Session`), not the CLI's options."""
    for task, path in options.checkpoints.items() if models else ():
        if not Path(path).expanduser().is_file():
            given = f'checkpoints={{"{cli_name(task)}": ...}}' if python else f"--checkpoint {cli_name(task)}=..."
            raise UserError(f"Checkpoint {path} does not exist; check the path given with {given}, "
                            f"or leave that task out of it to use the released weights.")
    wanted = [t for t in options.tasks if t not in options.checkpoints] if models else []
    wanted += ["detector"] if detector else []
    missing = missing_weights(wanted, options.size) if wanted else []
    if not missing or hub.hub_reachable():
        return  # all here, or they download as they load
    files = ", ".join(where for _, where in missing)
    command = download_command([task for task, _ in missing], options.size)
    if python:
        pass_them = 'checkpoints={"TASK": PATH}'
        others = ' (or detector=PATH, or boxes_from="seg" or "frame" instead of the detector)'
    else:
        pass_them = "--checkpoint TASK=PATH"
        others = " (or --detector PATH, or --boxes-from seg or --boxes-from frame instead of the detector)"
    others = others if detector and missing[-1][0] == "detector" else ""
    many = len(missing) > 1
    raise UserError(f"This run needs {len(missing)} weight file{'s' if many else ''} that {'are' if many else 'is'} "
                    f"not on this machine, and the hub cannot be reached (offline): {files}; run `{command}` on a machine "
                    f"with internet access to fetch {'them all' if many else 'it'}, or set ${hub.CHECKPOINT_ROOT_ENV}, "
                    f"or pass {pass_them}{others}.")


def _load_models(options: RunOptions, device: str, dtype: torch.dtype) -> dict:
    models = {}
    for task in options.tasks:
        arch = None if task in options.checkpoints else f"sapiens2_{options.size}"
        model = load_model(task, options.checkpoints.get(task), arch=arch, device=device, dtype=dtype)
        models[task] = model  # --compile: the Predictor compiles them (fixed shapes, every bucket warmed)
    return models


def _box_finder(options: RunOptions, device: str, mode: RunMode):
    """Stills are detected one by one: no boxes carried from the previous image."""
    return make_box_finder(boxes_from=options.boxes_from, detector_checkpoint=options.detector, device=device,
                           detect_every=options.detect_every if mode.follows_people else 1, max_people=options.max_people,
                           half=device.startswith("cuda"), cuda_graphs=cuda_graphs_for(options, device))


def _viewer(options, info, device, layers, write: WriteStage, outputs, models):
    from viz.viewer import Viewer  # Qt is imported only for --view

    folder = Path(outputs.get("tracks", options.output_dir)).parent

    def toggle_recording(on: bool) -> None:
        path = folder / f"recording-{time.strftime('%H%M%S')}.mp4"
        write.set_recorder(VideoSink(VideoWriter(path, fps=info.fps or 30.0)) if on else None)

    status = f"{info.uri} | {model_label(models)} | {device}"
    return Viewer(title=f"sapiens-rt: {info.name}", status=status, layers=layers, screenshot_dir=str(folder),
                  on_record_toggle=toggle_recording)


def model_label(models: dict) -> str:
    """The loaded models as the status line and caption name them: 'pose+seg sapiens2_0.4b',
    or per task when their archs differ ('pose sapiens2_1b, seg sapiens2_0.4b')."""
    archs = {task: getattr(model, "arch", None) or type(model).__name__ for task, model in models.items()}
    if len(set(archs.values())) == 1:
        return f"{'+'.join(archs)} {next(iter(archs.values()))}"
    return ", ".join(f"{task} {arch}" for task, arch in archs.items())


def _caption(models: dict, device: str) -> Callable[[dict], str]:
    label = model_label(models)

    def caption(snap: dict) -> str:
        text = f"{snap.get('fps', 0):.1f} fps"
        if "latency_ms" in snap:
            text += f" | latency {snap['latency_ms']:.0f} ms"
        if snap.get("dropped"):
            text += f" | dropped {int(snap['dropped'])}"
        return f"{text} | {label} {device}"
    return caption


def _model_card(options: RunOptions, models: dict, device: str, dtype: torch.dtype, input_hw: tuple[int, int]) -> dict:
    return {
        "tasks": sorted(models),
        "arch": {task: getattr(m, "arch", None) for task, m in models.items()},
        "input_size": list(input_hw),
        "device": device,
        "dtype": str(dtype).replace("torch.", ""),
        "flip_test": options.flip_test,
        "boxes_from": options.boxes_from,
        "smoothing": options.smooth,
    }


def _only_models_busy() -> bool:
    """While stopping: some stage thread still works on its frame, and the write stage (and so
    every output) is done with its last one."""
    alive = {t.name for t in threading.enumerate() if t.name.startswith("stage-") and t.is_alive()}
    return bool(alive) and "stage-write" not in alive


class _stop_on_signals:
    """Ctrl+C / SIGTERM ask the pipeline to stop (outputs are finalized). A second one while
    stopping ends the wait for frames still inside the models at once (KeyboardInterrupt: the
    run's clean-up closes the outputs); it is ignored while the write stage itself is busy or
    the outputs are being closed, so every file stays whole."""

    def __init__(self, pipeline: Pipeline):
        self.pipeline = pipeline
        self.saved = {}
        self.signalled = False

    def __enter__(self):
        if threading.current_thread() is not threading.main_thread():
            return self
        for sig in (signal.SIGINT, signal.SIGTERM):
            self.saved[sig] = signal.signal(sig, self._handle)
        return self

    def _handle(self, signum, _frame) -> None:
        if self.signalled and _only_models_busy():
            print("stopping now: frames still inside the models are dropped", file=sys.stderr)
            raise Terminated() if signum == signal.SIGTERM else KeyboardInterrupt()
        if not self.signalled and not self.pipeline.stop_event.is_set():
            print("\nstopping: finishing the current frame and closing the outputs...", file=sys.stderr)
        self.signalled = True
        self.pipeline.stop("terminated" if signum == signal.SIGTERM else "interrupted")

    def __exit__(self, *exc) -> None:
        for sig, handler in self.saved.items():
            signal.signal(sig, handler)
