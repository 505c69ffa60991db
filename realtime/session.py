"""`Session`: the pipeline for one frame at a time, for your own camera loop, a game engine
bridge or a notebook.

    from realtime import Session

    with Session(tasks=("pose", "depth"), checkpoints={"pose": "pose.safetensors", "depth": "depth.safetensors"}) as session:
        for t, image in my_camera():                 # (H, W, 3) uint8 RGB, seconds
            frame = session.process(image, t)        # realtime.Frame: people with ids, keypoints, face, bones
            for person in frame.people:
                print(person.track_id, person.best_keypoints[0], person.bones)

`process` runs the stages `sapiens-rt run` runs (built by `realtime.build.Builder`: detect,
infer, identity and smoothing, face, egomotion, ground, world, motion; then the live senders,
the overlay and the outputs asked for) on the calling thread, one frame after the other: ids
and filters carry over between calls, as MediaPipe's VIDEO mode does, so frames must come in
time order. The options have `run`'s names (`realtime.options`) and are checked as `run`
checks them; `stream(source)` does the same over a video file, camera or image folder.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Iterator, Mapping, Optional, Sequence

import numpy as np

from realtime import tasks as task_table
from realtime.build import Builder, OutputFiles, caption, is_stream, layers
from realtime.errors import UserError
from realtime.frames import Frame
from realtime.json_fields import FLOAT32_MAX
from realtime.mode import RunMode
from realtime.options import GROUP_OF, Caller, RunOptions

# Session's own argument names where they differ from the option's.
_NAMES = {"input_hw": "input_size"}
# `run` options a Session does not do: the values it can honour (what it does anyway), and what to do instead.
_NOT_TAKEN = {
    "view": ((False,), "draw frame.overlay yourself (out= writes the overlay video), or use sapiens-rt run --view"),
    "max_in_flight": ((None, 1), "a Session works on one frame at a time, on the calling thread"),
    "stills": ((None, False), "give each unrelated photo to a Session of its own (ids and filters follow one video)"),
    "output_dir": (("recordings",), "name the files with tracks= and out="),
    "progress": ((False, True), ""),  # either: a Session shows no progress bar, and nothing is lost (the type is checked)
    "no_video": ((False, True), ""),  # honoured: no out= (refused below together with out=)
}

_SENDER_OPTIONS = {"vmc", "vmc_person", "vmc_fingers", "vmc_bundle", "vmc_face_only", "osc", "vrchat", "vrchat_trackers",
                   "vrchat_height", "vrchat_person"}  # `realtime.stages.live_senders`' own


class Session:
    """Sapiens2 on one frame at a time, with the run's tracking, smoothing, face, ground and motion.

    tasks:        task names or aliases ("pose", "seg", "normal", "depth" = "pointmap", ...).
    checkpoints:  task -> a local checkpoint file; tasks not named load the released weights
                  (`size`) from the Hugging Face cache or hub.
    device/dtype: "cuda", "cuda:N" or "cpu" (any case); "fp32", "bf16", "fp16" (default: the best for the device).
    input_size:   network input (H, W), or "HxW" such as "1024x768" (default: the models' own size).
    smooth:       "one_euro", "kalman" or "none"; smoothness in [0, 1].
    max_people:   keep at most this many people; boxes_from: "detector", "seg" or "frame".
    detect_every: run the detector every N frames (default 1); dense_every: normal/depth every N.
    tracks, out:  write the tracks JSONL / the overlay video as `sapiens-rt run --tracks/--out` does
                  (closed by `close()`, the end of a `with` block, or a Ctrl+C inside `process`).
    senders:      live senders (`realtime.stages.live_senders(vmc=[...])`), sent each frame (by `stream`
                  of a file at the frame's time in it, unless live_pace=False, as in a run).
    max_frames:   `stream` stops after this many frames; `process` takes no more than this many.
    models:       task -> a loaded model (instead of checkpoints, e.g. `realtime.models.build_model`);
    box_finder:   your own boxes `(image, index, previous people, seg) -> (boxes, scores, source)`.
    Any other `run` option (`realtime.options`) may be given by name, e.g. `flip_test=True`.
    """

    def __init__(self, tasks: Sequence[str] = ("pose",), checkpoints: Optional[Mapping[str, str]] = None, *,
                 size: str = "0.4b", device: Optional[str] = None, dtype: Optional[str] = None,
                 input_size: Optional[str | tuple[int, int]] = None, smooth: str = "one_euro", smoothness: float = 0.5,
                 max_people: Optional[int] = None, boxes_from: str = "detector", detect_every: int = 1,
                 dense_every: int = 1, models: Optional[dict] = None, box_finder=None, **options):
        self._stages: Optional[list] = None  # built on the first frame, for its size
        self._files: Optional[OutputFiles] = None
        self._closed = False
        unknown = [name for name in options if name not in GROUP_OF]
        if unknown and unknown[0] in _SENDER_OPTIONS:  # run's --vmc, --osc, --vrchat...: made apart, as senders
            raise UserError(f"Session takes {unknown[0]}= through its senders; give senders=realtime.stages.live_senders("
                            f"{unknown[0]}=..., tasks=...).")
        if unknown:
            raise UserError(f"Session got an unknown option {unknown[0]!r}; the options are those of sapiens-rt run, "
                            f"written in Python (e.g. flip_test=True).")
        for name, (honoured, why) in _NOT_TAKEN.items():
            if why and name in options and not any(options[name] is v or options[name] == v for v in honoured):
                raise UserError(f"Session does not take {name}={options[name]!r}; {why}.")
        if options.get("no_video") and options.get("out") is not None:
            raise UserError("Session got no_video=True and out=...; leave out= unset for no video.")
        if "input_hw" in options:
            raise UserError("Session takes the network input size as input_size=(H, W); give it there.")
        if checkpoints is not None and not isinstance(checkpoints, Mapping):
            raise UserError(f"checkpoints={checkpoints!r} is not task -> file; give e.g. "
                            f'checkpoints={{"pose": "pose.safetensors"}}.')
        names = dict(tasks=tasks, size=size, device=device, dtype=dtype, smooth=smooth, smoothness=smoothness,
                     max_people=max_people, boxes_from=boxes_from, detect_every=detect_every, dense_every=dense_every,
                     checkpoints={str(t): str(p) for t, p in (checkpoints or {}).items()}, input_hw=input_size, **options)
        caller = Caller(names=_NAMES)
        builder = Builder(RunOptions.from_names("<frames>", names), caller=caller)  # `run`'s checks, in Python's words
        self.builder = builder
        self.options = builder.options
        self.device, self.dtype = builder.device, builder.dtype
        outputs = {kind: path for kind, path in (("tracks", self.options.outputs.tracks), ("video", self.options.outputs.out))
                   if path is not None}
        self._files = OutputFiles(outputs, builder.weight_files(), caller) if outputs else None  # refused before the take
        try:
            if models is None:
                builder.check_weights(models=True, detector=builder.needs_detector(box_finder is not None))
            if self._files is not None:
                self._files.hold()
            self.models = models if models is not None else builder.load_models()
            skeletal = [part for part in self.options.live_outputs.senders if getattr(part, "needs_3d", False)]
            # VRChat's trackers, VMC's bones: the body solved in 3D (models= may name depth by its alias)
            if skeletal and not task_table.gives_3d([task_table.canonical(str(t)) for t in self.models]):
                raise UserError(f"senders= holds a {skeletal[0].name} sender, which sends the body solved from 3D keypoints "
                                f"of the depth task that tasks leaves out; add depth (e.g. tasks='pose,depth').")
            self.box_finder = box_finder or builder.box_finder(RunMode.FILE)
        except BaseException:
            if self._files is not None:
                self._files.release(failed=True)
                self._files = None
            raise
        self._sinks: list = []
        self._size: Optional[tuple[int, int]] = None
        self._index = 0
        self._last_time = -math.inf

    @property
    def stages(self) -> list:
        """The stages a frame goes through (after the first `process`)."""
        return list(self._stages or [])

    def process(self, image: np.ndarray, timestamp: float) -> Frame:
        """One RGB frame ((H, W, 3) uint8) at `timestamp` seconds -> a `Frame` with its people
        (track ids, smoothed keypoints, face, 3D keypoints, contacts and bones, as the tasks allow)
        and its dense maps. Frames must come in time order; their size may change, as in a run."""
        if self._closed:
            raise UserError("process() was called after close(); make a new Session.")
        image = np.asarray(image)
        if image.ndim != 3 or image.shape[2] != 3 or image.dtype != np.uint8:
            raise UserError(f"process() takes an (H, W, 3) uint8 RGB image, got {image.shape} {image.dtype}; "
                            f"convert BGR from OpenCV with image[..., ::-1].")
        if image.shape[0] < 2 or image.shape[1] < 2:
            raise UserError(f"process() got a {image.shape[1]}x{image.shape[0]} image, which holds no picture; give one of at "
                            f"least 2x2 pixels.")
        try:
            timestamp = float(timestamp)
        except (TypeError, ValueError):
            raise UserError(f"process() got the timestamp {timestamp!r}; give the frame's time in seconds (a number).") \
                from None
        if not abs(timestamp) <= FLOAT32_MAX:  # inf, NaN, or so huge no later time follows it (the record's limit)
            raise UserError(f"process() got the timestamp {timestamp:g}; give the frame's time in seconds (a finite number "
                            f"of at most {FLOAT32_MAX:.3g}).")
        if not timestamp > self._last_time:
            raise UserError(f"process() got timestamp {timestamp} after {self._last_time}; give each frame a later time "
                            f"in seconds (ids and filters follow time).")
        max_frames = self.options.input.max_frames
        if max_frames is not None and self._index >= max_frames:
            raise UserError(f"process() got frame {self._index + 1} of a Session made with max_frames={max_frames}; make it "
                            f"with a larger max_frames, or without it.")
        try:
            if self._stages is None:
                self._stages = self._build(image.shape[:2], self.options.input.webcam_fps, "<frames>")
            frame = Frame(index=self._index, timestamp=timestamp, image=np.ascontiguousarray(image))
            for stage in self._stages:
                frame = stage.process(frame)
        except KeyboardInterrupt:  # Ctrl+C: the outputs are closed whole, the Session ends
            self.close()
            raise
        self._index += 1
        self._last_time = timestamp
        return frame

    def _build(self, image_hw: tuple[int, int], fps: Optional[float], source: str, *, pace: bool = False) -> list:
        """The run's stages for this Session: analysis, then the live senders, the overlay and
        the outputs (tracks, video, your own sinks), as `sapiens-rt run` orders them. `pace`: the
        senders send each frame at its media time (a recorded source given to `stream`, as a run does)."""
        from realtime.metrics import Metrics
        from realtime.sinks.base import VideoSink
        from realtime.sinks.video import VideoWriter
        from realtime.stages import LiveStage, RenderStage, WriteStage

        builder, options = self.builder, self.options
        stages = builder.analysis_stages(self.models, self.box_finder, RunMode.FILE, image_hw, fps)
        out = options.outputs
        if out.tracks is not None:
            self._sinks.append(builder.track_writer(out.tracks, self.models, stages, image_wh=(image_hw[1], image_hw[0]),
                                                    fps=fps, source=source, mode=RunMode.FILE))
        if out.out is not None:
            self._sinks.append(VideoSink(VideoWriter(out.out, fps=fps or 30.0)))
        if self._files is not None:
            self._files.writers_opened()
        senders = options.live_outputs.senders
        if senders:  # the avatar first, as in a run
            live = LiveStage(senders, pace=pace)
            live.period = 1.0 / (fps or 30.0)
            stages.append(live)
        if out.out is not None:
            line = caption(self.models, self.device) if out.caption else (lambda snap: None)
            stages.append(RenderStage(layers(self.models), Metrics(), line))
        extra = list(options.live_outputs.sinks)
        if self._sinks or extra:
            stages.append(WriteStage(self._sinks + extra))
        return stages

    def stream(self, source: str, *, max_frames: Optional[int] = None) -> Iterator[Frame]:
        """Frames of a video file, camera (`0`), stream URL or image folder, each through `process`
        (at most `max_frames`, and at most the Session's own `max_frames`)."""
        from realtime.sources import open_source

        if max_frames is not None and (isinstance(max_frames, bool) or not isinstance(max_frames, int) or max_frames < 1):
            raise UserError(f"stream() got max_frames={max_frames!r}; give a whole number of 1 or more.")
        total = self.options.input.max_frames  # the Session's own limit counts every frame it took
        src = self.options.input
        opened = open_source(str(source), width=src.webcam_size[1], height=src.webcam_size[0], fps=src.webcam_fps,
                             timeout=src.timeout, reconnects=src.reconnects)
        info = opened.open()
        try:
            if self._files is not None:
                self._files.check_inputs(opened.input_files())  # the take must not overwrite its source
            if self._stages is None:  # the tracks header gets the source's name and frame rate
                pace = self.options.live_outputs.live_pace and not info.live  # a file's frames at their time, as in a run
                self._stages = self._build((info.height, info.width), info.fps, info.uri, pace=pace)
            for count, (timestamp, image) in enumerate(opened.frames()):
                if (max_frames is not None and count >= max_frames) or (total is not None and self._index >= total):
                    break
                if count == 0 and not timestamp > self._last_time:  # a second clip: its time starts over
                    raise UserError(f"stream() got {source}, whose first frame is at {timestamp:g} s, after this Session's "
                                    f"frame at {self._last_time:g} s; make a new Session for each clip (ids and filters "
                                    f"follow one video's time).")
                yield self.process(image, timestamp)
        finally:
            opened.close()

    def close(self) -> None:
        """Close the outputs (tracks, video, senders) and release the stages' state (the models
        stay loaded while you hold the Session). Safe to call twice."""
        if self._closed:
            return
        self._closed = True
        errors = []
        # the write stage closes the outputs and the live stage the senders; before the first frame, they close here
        built = self._stages if self._stages is not None else [*self._sinks, *self.options.live_outputs.senders]
        for part in built:
            try:
                part.close()
            except Exception as err:  # close the others anyway, then report
                errors.append(err)
        self._stages = None
        from realtime.sinks.tracks import TrackWriter

        tracks = self.options.outputs.tracks
        if any(isinstance(s, TrackWriter) and s.frames_written == 0 for s in self._sinks) and not is_stream(tracks):
            Path(tracks).unlink(missing_ok=True)  # a header without frames is nothing worth keeping, as in a run
        if self._files is not None:
            self._files.release(failed=self._index == 0)
            self._files = None
        if errors:
            raise errors[0]

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
