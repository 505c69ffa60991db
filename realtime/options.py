"""What a run is asked to do, in small groups shared by `run`, `batch` and the Python API.

Each group is one frozen dataclass whose defaults are the library's defaults;
the CLI fills one group per argument group (`sapiens-rt run` and
`sapiens-rt batch` share the source, models, people and smoothing groups).
`RunOptions` holds the groups; it can also be built and read with the flat
names, so `RunOptions(source="clip.mp4", tasks=("pose",), detect_every=3)` and
`options.detect_every` work as they always did.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Optional


@dataclass(frozen=True)
class SourceOptions:
    """How the source is read."""

    webcam_size: tuple[Optional[int], Optional[int]] = (None, None)  # capture (height, width); None: the camera's own
    webcam_fps: Optional[float] = None  # camera capture rate, or an image folder's frame rate (default 30)
    timeout: float = 10.0  # seconds to wait for a network stream
    reconnects: int = 3  # times to reopen a stream that dies
    max_frames: Optional[int] = None
    max_in_flight: Optional[int] = None  # frames inside the stages at once; None: 2 for live sources, one per stage for files
    stills: Optional[bool] = None  # unrelated photos: no tracking or smoothing; None: for image folders of mixed sizes
    camera: str = "auto"  # the camera: "static" (no egomotion), "moving" (people in the world) or "auto" (once seen to move)


@dataclass(frozen=True)
class ModelOptions:
    """Which networks run, from which weights, on what, at which input size and rate."""

    tasks: tuple[str, ...] = ("pose", "seg")  # names or aliases of `realtime.tasks` rows
    size: str = "0.4b"
    checkpoints: dict[str, str] = field(default_factory=dict)  # task -> file
    detector: Optional[str] = None  # RTMDet checkpoint file; None: the released one
    device: Optional[str] = None
    dtype: Optional[str] = None
    input_hw: Optional[tuple[int, int]] = None  # pose crops and seg (the tasks that follow --input-size); None: as trained
    pointmap_hw: Optional[tuple[int, int]] = None  # the pointmap model's input; None: the size it was trained at
    task_sizes: dict[str, tuple[int, int]] = field(default_factory=dict)  # task -> network input (H, W), any task
    dense_every: Optional[int] = None  # normal/depth every N frames; None: adaptive on live sources, 1 on files
    dense_auto: bool = False  # adaptive for any source (fit the dense tasks into the source's frame budget)
    seg_every: Optional[int] = None  # seg every N frames; None: every other frame when behind on live sources, 1 on files
    seg_auto: bool = False  # seg every other frame when behind, for any source
    flip_test: bool = False
    compile: Optional[bool] = None  # torch.compile the models; None: on with CUDA (realtime.run.compile_for)
    fp8: "bool | str" = False  # backbone linears in E4M3 (compute capability 8.9+): True/"attention", "ffn", "attention+ffn"
    sdpa: str = "default"  # the backbones' attention kernel (realtime.models.sapiens2.SDPA_BACKENDS; bench/gpu_sdpa.py)
    dual_backbone: bool = False  # pose and seg backbones as one on frames with both (realtime.models.dual)
    fuse: bool = False  # SwiGLU in its GEMM's epilogue, residual add + RMSNorm in one pass (realtime.models.triton_fused)
    # replay a CUDA graph per (task, person bucket) and for the detector; None: on when the run is on CUDA
    cuda_graphs: Optional[bool] = None
    crop_sampling: str = "official"  # person-crop interpolation, realtime.transforms.CROP_SAMPLING


@dataclass(frozen=True)
class PeopleOptions:
    """Where person boxes come from and how many people are kept."""

    boxes_from: str = "detector"  # "detector", "seg" or "frame"
    detect_every: Optional[int] = None  # None: 3 on live sources, 1 on files (realtime.detect.default_detect_every)
    max_people: Optional[int] = None


@dataclass(frozen=True)
class SmoothingOptions:
    """The live keypoint filter."""

    smooth: str = "one_euro"  # "one_euro", "kalman" or "none"
    smoothness: float = 0.5  # 0 = raw, 1 = strongest
    face_calibrate: float = 2.0  # seconds of each person's first face from which its neutral is learned


@dataclass(frozen=True)
class OutputOptions:
    """The files a run writes."""

    out: Optional[str] = None  # video file; None -> recordings/<name>-<time>/overlay.mp4 (unless no_video)
    tracks: Optional[str] = None  # tracks JSONL; None -> next to the video
    output_dir: str = "recordings"
    no_video: bool = False
    progress: bool = True
    caption: bool = True  # fps / latency / model line drawn on the overlay


@dataclass(frozen=True)
class LiveOutputOptions:
    """What a run shows or streams while it runs."""

    view: bool = False
    senders: list = field(default_factory=list)  # live senders (realtime.stages.live_senders: VMC, OSC), fed before render
    live_pace: bool = True  # on recorded sources, send each frame at its media time (False: as soon as it is ready)
    sinks: list = field(default_factory=list)  # extra realtime.sinks.Sink objects (your own), after the built-in ones


# RunOptions attribute -> its group's class.
GROUPS: dict[str, type] = {"input": SourceOptions, "models": ModelOptions, "people": PeopleOptions,
                           "smoothing": SmoothingOptions, "outputs": OutputOptions, "live_outputs": LiveOutputOptions}
# Flat option name -> the RunOptions attribute of its group.
_GROUP_OF: dict[str, str] = {f.name: group for group, cls in GROUPS.items() for f in dataclasses.fields(cls)}


def option_names() -> tuple[str, ...]:
    """Every option `RunOptions` takes by its flat name."""
    return tuple(_GROUP_OF)


@dataclass(init=False)
class RunOptions:
    """Everything `realtime.run.run()` needs: the source and one object per option group.

    Build it from groups, flat names, or both (flat names override the groups they belong to):

        RunOptions(source="clip.mp4", models=ModelOptions(tasks=("pose",)), detect_every=3)

    Reading or setting a flat name (`options.detect_every`) reads or replaces it in its group.
    """

    source: str
    input: SourceOptions
    models: ModelOptions
    people: PeopleOptions
    smoothing: SmoothingOptions
    outputs: OutputOptions
    live_outputs: LiveOutputOptions

    def __init__(self, source: str, *, input: Optional[SourceOptions] = None, models: Optional[ModelOptions] = None,
                 people: Optional[PeopleOptions] = None, smoothing: Optional[SmoothingOptions] = None,
                 outputs: Optional[OutputOptions] = None, live_outputs: Optional[LiveOutputOptions] = None, **flat: Any):
        groups = {"input": input, "models": models, "people": people, "smoothing": smoothing, "outputs": outputs,
                  "live_outputs": live_outputs}
        changes: dict[str, dict[str, Any]] = {}
        for name, value in flat.items():
            if name not in _GROUP_OF:
                raise TypeError(f"RunOptions got an unknown option {name!r}")
            changes.setdefault(_GROUP_OF[name], {})[name] = value
        self.source = source
        for name, cls in GROUPS.items():
            group = groups[name] if groups[name] is not None else cls()
            setattr(self, name, dataclasses.replace(group, **changes[name]) if name in changes else group)

    def __setattr__(self, name: str, value: Any) -> None:
        group = _GROUP_OF.get(name)
        if group is None:
            object.__setattr__(self, name, value)
        else:  # a flat name: a new group with that one value changed
            object.__setattr__(self, group, dataclasses.replace(getattr(self, group), **{name: value}))

    def __getattr__(self, name: str) -> Any:
        group = _GROUP_OF.get(name)
        if group is None:
            raise AttributeError(f"RunOptions has no option {name!r}")
        return getattr(getattr(self, group), name)
