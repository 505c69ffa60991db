"""`sapiens-rt run`: build a pipeline from options and run it.

It opens the source, checks the outputs, builds the models, box finder and stages
through `realtime.build.Builder` (the builder `batch` and `realtime.Session` use too),
adds the outputs (live senders, overlay, tracks, video, viewer), installs the Ctrl+C
handler, runs, and returns the summary. Library users can call `run(RunOptions(...))`,
or pass ready-made models (tests and benchmarks use tiny or random-weight ones).
"""

from __future__ import annotations

import contextlib
import logging
import signal
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

import torch
from tqdm import tqdm

from realtime import tasks as task_table
from realtime.build import Builder, OutputFiles, caption, check_options, is_stream, layers, model_label, parse_size
from realtime.errors import Terminated
from realtime.metrics import Metrics
from realtime.mode import RunMode, decide_mode
from realtime.options import PYTHON, Caller, RunOptions
from realtime.pipeline import Pipeline, RunResult
from realtime.sinks.base import LatestWins, ProgressSink, VideoSink, ViewerSink
from realtime.sinks.tracks import TrackWriter
from realtime.sinks.video import VideoWriter
from realtime.sources import Source, SourceInfo, open_source
from realtime.stages import InferStage, LiveStage, RenderStage, WorldStage, WriteStage

log = logging.getLogger(__name__)

__all__ = ["RunOptions", "RunSummary", "run", "check_options", "parse_size", "parse_tasks", "is_stream", "model_label"]

LIVE_MAX_IN_FLIGHT = 3  # frames inside the stages at once on cameras and streams: 3 keeps the GPU fed (docs/gpu-performance.md)
# On a CPU the model's work is done when the infer stage returns, so a second frame inside would only wait in front of
# the model (bench/RESULTS.md, "Glass to datagram").
LIVE_MAX_IN_FLIGHT_CPU = 1


@dataclass
class RunSummary:
    result: RunResult
    lines: list[str]  # the summary printed at the end
    outputs: dict[str, str]  # kind ("video", "tracks") -> path ("-": standard output)
    stats: dict[str, float]  # the final metrics snapshot (fps, latency_ms, stage.<name>_ms, ...)


def parse_tasks(text: str) -> tuple[str, ...]:
    """'pose,seg,depth' -> ('pose', 'seg', 'pointmap'); unknown names are a user error."""
    return task_table.parse(text)


def run(options: RunOptions, *, models: Optional[dict] = None, box_finder: Optional[Callable] = None,
        source: Optional[Source] = None, caller: Caller = PYTHON) -> RunSummary:
    """Run the whole pipeline. `models` (task -> module on the device), `box_finder` and
    `source` (not yet opened) replace what `options` would load or open, for tests and benchmarks.
    `caller`: how errors name the options (`realtime.options.CLI` from the command line)."""
    builder = Builder(options, caller=caller)  # every option checked before anything is opened
    options = builder.options
    if options.live_outputs.view:
        from viz.viewer import check_display  # Qt is imported only for --view

        check_display()  # before anything is opened or written: a broken Qt would abort the process
    if source is None:
        src = options.input
        source = open_source(options.source, width=src.webcam_size[1], height=src.webcam_size[0], fps=src.webcam_fps,
                             timeout=src.timeout, reconnects=src.reconnects)
    info = source.open()
    files: Optional[OutputFiles] = None
    try:
        mode = decide_mode(source, info, stills=options.input.stills, boxes_from=options.people.boxes_from)
        outputs = _output_paths(options, info)
        files = OutputFiles(outputs, [*source.input_files(), *builder.weight_files()], caller)  # checked, folders made
        builder.check_weights(models=models is None, detector=builder.needs_detector(box_finder is not None))
        files.hold()  # a second run writing the same files is refused here; a FIFO waits for its reader
        if models is None:
            log.info("loading models")
            models = builder.load_models()
        if box_finder is None:
            box_finder = builder.box_finder(mode)
        return _run_pipeline(builder, mode, source, info, models, box_finder, outputs, files)
    except BaseException:
        if files is not None:
            files.release(failed=True)  # removes output files and folders it created that are still empty
        raise
    finally:
        if files is not None:
            files.release()
        source.close()


def _run_pipeline(builder: Builder, mode: RunMode, source: Source, info: SourceInfo, models, box_finder, outputs,
                  files: OutputFiles) -> RunSummary:
    options, device = builder.options, builder.device
    metrics = Metrics()
    log.info("warming up")
    people_stages = builder.analysis_stages(models, box_finder, mode, (info.height, info.width), info.fps)
    predictor = next(stage.predictor for stage in people_stages if isinstance(stage, InferStage))
    drawn = layers(models)
    live_options = options.live_outputs
    viewer = None
    sinks: list = []  # in the order they get each frame
    extra = [LatestWins(s) if mode is RunMode.LIVE else s for s in live_options.sinks]  # live: a slow sink must not stall
    shares_cores = _shares_cores_with_senders(options, device, mode, outputs)  # live senders beside drawing, on a CPU
    try:
        if "tracks" in outputs:
            sinks.append(builder.track_writer(outputs["tracks"], models, people_stages, image_wh=(info.width, info.height),
                                              fps=info.fps, source=info.uri, mode=mode,
                                              stills=source.frame_file if mode is RunMode.STILLS else None))
        if "video" in outputs:
            # beside live senders on a CPU the encoder takes one thread: it has the core the model leaves it
            sinks.append(VideoSink(VideoWriter(outputs["video"], fps=info.fps or 30.0, audio_from=info.audio_path,
                                               threads=1 if shares_cores else None)))
        files.writers_opened()  # they hold the FIFOs open now
        write = WriteStage()
        stages = list(people_stages)
        live = None
        if live_options.senders:  # the avatar first: sent here, before anything is drawn, encoded or written
            live = LiveStage(live_options.senders, pace=live_options.live_pace and mode is RunMode.FILE)
            live.period = 1.0 / (info.fps or 30.0)
            stages.append(live)
        if live_options.view or "video" in outputs:
            line = caption(models, device) if options.outputs.caption else (lambda snap: None)
            stages.append(RenderStage(drawn, metrics, line))
        if live_options.view:
            viewer = _viewer(options, info, device, drawn, write, outputs, models)
            sinks.append(ViewerSink(viewer, metrics))
        sinks += extra
        if options.outputs.progress and mode.shows_progress:
            sinks.append(ProgressSink(tqdm(total=options.input.max_frames or info.frame_count, unit="frame", desc=info.name,
                                           dynamic_ncols=True)))
        write.sinks = sinks
        stages.append(write)
        # Live sources: few frames in flight, so what is shown is close to now (stale ones drop at the gate).
        live_in_flight = LIVE_MAX_IN_FLIGHT_CPU if device == "cpu" else LIVE_MAX_IN_FLIGHT
        in_flight = options.input.max_in_flight or (live_in_flight if mode is RunMode.LIVE else None)
        pipeline = Pipeline(source, stages, metrics=metrics, max_frames=options.input.max_frames, max_in_flight=in_flight,
                            mode=mode, release_after=live.name if live is not None else None)
        if live is not None:
            live.wait = pipeline.stop_event.wait  # pacing ends at once when the run stops
        log.info("running")
        with _stop_on_signals(pipeline), _model_threads(_threads_beside_drawing(shares_cores)):
            result = pipeline.run(_viewer_loop(viewer, pipeline) if viewer is not None else None)
    except BaseException:  # e.g. Ctrl+C before the stages ran: close (and drop) what was opened
        for sink in sinks + [s for s in extra if s not in sinks] + list(live_options.senders):
            with contextlib.suppress(Exception):  # the error that got here is the one to report
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
    draws = options.live_outputs.view or "video" in outputs
    return device == "cpu" and mode is RunMode.LIVE and bool(options.live_outputs.senders) and draws


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
    return f"boxes from: {options.people.boxes_from}"


def _output_paths(options: RunOptions, info: SourceInfo) -> dict[str, str]:
    """Explicit --out/--tracks, else a fresh folder recordings/<source>-<time>/."""
    out = options.outputs
    outputs = {}
    folder = None
    if out.out is None or out.tracks is None:
        folder = Path(out.output_dir) / f"{info.name}-{time.strftime('%Y%m%d-%H%M%S')}"
    if not out.no_video:
        outputs["video"] = out.out or str(folder / "overlay.mp4")
    outputs["tracks"] = out.tracks or str(folder / "tracks.jsonl")
    return outputs


def _viewer(options, info, device, layers, write: WriteStage, outputs, models):
    from viz.viewer import Viewer  # Qt is imported only for --view

    folder = Path(outputs.get("tracks", options.outputs.output_dir)).parent

    def toggle_recording(on: bool) -> None:
        path = folder / f"recording-{time.strftime('%H%M%S')}.mp4"
        write.set_recorder(VideoSink(VideoWriter(path, fps=info.fps or 30.0)) if on else None)

    status = f"{info.uri} | {model_label(models)} | {device}"
    return Viewer(title=f"sapiens-rt: {info.name}", status=status, layers=layers, screenshot_dir=str(folder),
                  on_record_toggle=toggle_recording)


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
