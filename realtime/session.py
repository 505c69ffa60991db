"""`Session`: the pipeline for one frame at a time, for your own camera loop, a game engine
bridge or a notebook.

    from realtime import Session

    with Session(tasks=("pose", "depth"), checkpoints={"pose": "pose.safetensors", "depth": "depth.safetensors"}) as session:
        for t, image in my_camera():                 # (H, W, 3) uint8 RGB, seconds
            frame = session.process(image, t)        # realtime.Frame: people with ids, keypoints, face, bones
            for person in frame.people:
                print(person.track_id, person.best_keypoints[0], person.bones)

`process` runs the stages `sapiens-rt run` runs (`realtime.run.analysis_stages`: detect, infer,
identity and smoothing, face, ground, motion) on the calling thread, one frame after the other:
ids and filters carry over between calls, as MediaPipe's VIDEO mode does, so frames must come
in time order. The options have `run`'s names (`realtime.options`); `stream(source)` does the
same over a video file, camera or image folder.
"""

from __future__ import annotations

import math
from typing import Iterator, Mapping, Optional, Sequence

import numpy as np

from realtime.errors import UserError
from realtime.frames import Frame
from realtime.mode import RunMode
from realtime.options import RunOptions


class Session:
    """Sapiens2 on one frame at a time, with the run's tracking, smoothing, face, ground and motion.

    tasks:        task names or aliases ("pose", "seg", "normal", "depth" = "pointmap", ...).
    checkpoints:  task -> a local checkpoint file; tasks not named load the released weights
                  (`size`) from the Hugging Face cache or hub.
    device/dtype: "cuda" / "cpu"; "fp32", "bf16", "fp16" (default: the best for the device).
    input_size:   "HxW" of the network input, e.g. "1024x768" (default: the models' own size).
    smooth:       "one_euro", "kalman" or "none"; smoothness in [0, 1].
    max_people:   keep at most this many people; boxes_from: "detector", "seg" or "frame".
    detect_every: run the detector every N frames (default 1); dense_every: normal/depth every N.
    models:       task -> a loaded model (instead of checkpoints, e.g. `realtime.models.build_model`);
    box_finder:   your own boxes `(image, index, previous people, seg) -> (boxes, scores, source)`.
    Any other `run` option (`realtime.options`) may be given by name, e.g. `flip_test=True`.
    """

    def __init__(self, tasks: Sequence[str] = ("pose",), checkpoints: Optional[Mapping[str, str]] = None, *,
                 size: str = "0.4b", device: Optional[str] = None, dtype: Optional[str] = None,
                 input_size: Optional[str] = None, smooth: str = "one_euro", smoothness: float = 0.5,
                 max_people: Optional[int] = None, boxes_from: str = "detector", detect_every: int = 1,
                 dense_every: int = 1, models: Optional[dict] = None, box_finder=None, **options):
        from realtime import run as run_module
        from realtime import tasks as task_table

        if isinstance(tasks, str):
            tasks = tuple(t for t in tasks.split(",") if t)
        chosen = task_table.parse(",".join(tasks))
        sizes = {}
        if input_size is not None:
            sizes["input_hw"] = run_module.parse_size(input_size, "input_size")
        from realtime.options import option_names

        unknown = [name for name in options if name not in option_names()]
        if unknown:
            raise UserError(f"Session got an unknown option {unknown[0]!r}; the options are those of sapiens-rt run, "
                            f"written in Python (e.g. flip_test=True).")
        self.options = RunOptions(source="<frames>", tasks=chosen, size=size, device=device, dtype=dtype,
                                  smooth=smooth, smoothness=smoothness, max_people=max_people, boxes_from=boxes_from,
                                  detect_every=detect_every, dense_every=dense_every,
                                  checkpoints={task_table.get(t).name: str(p) for t, p in (checkpoints or {}).items()},
                                  **sizes, **options)
        if boxes_from == "seg" and not task_table.gives_body_parts(chosen):
            raise UserError('boxes_from="seg" needs the segmentation task; add "seg" to tasks, or use boxes_from="detector" or '
                            '"frame".')
        self.device = self.options.device or run_module.default_device()
        self.dtype = run_module._dtype(self.options.dtype, self.device)
        if models is None:
            run_module._check_weights_present(self.options, True, box_finder is None and boxes_from == "detector"
                                              and self.options.detector is None, python=True)
            models = run_module._load_models(self.options, self.device, self.dtype)
        self.models = models
        self.box_finder = box_finder or run_module._box_finder(self.options, self.device, RunMode.FILE)
        self._stages: Optional[list] = None  # built on the first frame, for its size
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
        and its dense maps. Frames must come in time order; every frame has the same size."""
        from realtime import run as run_module

        image = np.asarray(image)
        if image.ndim != 3 or image.shape[2] != 3 or image.dtype != np.uint8:
            raise UserError(f"process() takes an (H, W, 3) uint8 RGB image, got {image.shape} {image.dtype}; "
                            f"convert BGR from OpenCV with image[..., ::-1].")
        timestamp = float(timestamp)
        if not timestamp > self._last_time:
            raise UserError(f"process() got timestamp {timestamp} after {self._last_time}; give each frame a later time "
                            f"in seconds (ids and filters follow time).")
        if self._stages is None:
            self._size = image.shape[:2]
            self._stages = run_module.analysis_stages(self.options, self.models, self.box_finder, RunMode.FILE,
                                                      self.device, self.dtype, self._size, None)
        elif image.shape[:2] != self._size:
            raise UserError(f"process() got a {image.shape[1]}x{image.shape[0]} image after {self._size[1]}x{self._size[0]} "
                            f"ones; use one Session per video size.")
        frame = Frame(index=self._index, timestamp=timestamp, image=np.ascontiguousarray(image))
        for stage in self._stages:
            frame = stage.process(frame)
        self._index += 1
        self._last_time = timestamp
        return frame

    def stream(self, source: str, *, max_frames: Optional[int] = None) -> Iterator[Frame]:
        """Frames of a video file, camera (`0`), stream URL or image folder, each through `process`."""
        from realtime.sources import open_source

        opened = open_source(str(source), fps=self.options.webcam_fps)
        opened.open()
        try:
            for count, (timestamp, image) in enumerate(opened.frames()):
                if max_frames is not None and count >= max_frames:
                    break
                yield self.process(image, timestamp)
        finally:
            opened.close()

    def close(self) -> None:
        """Release the stages' state (the models stay loaded while you hold the Session)."""
        for stage in self._stages or []:
            stage.close()
        self._stages = None

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
