"""What a run is asked to do, in small groups shared by `run`, `batch` and the Python API.

Each group is one frozen dataclass whose defaults are the library's defaults;
the CLI fills one group per argument group (`sapiens-rt run` and
`sapiens-rt batch` share the source, models, people and smoothing groups).
`RunOptions` holds the source and the groups, and is read and changed by group:

    options = RunOptions(source="clip.mp4", models=ModelOptions(tasks=("pose",)), people=PeopleOptions(detect_every=3))
    options.people.detect_every                                  # 3
    options = options.change(people={"detect_every": 1})         # a new RunOptions

`Caller` says how the door that was used names each option, so that an error names what
the caller wrote: `--dense-every 0` from the CLI, `dense_every=0` from Python.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Mapping, Optional

CONTACT_DECIDERS = ("rules", "learned")  # how foot contacts are decided: hand-set gates or the contact model
MAX_MOTION_LAG_MS = 1000.0  # the most hindsight `motion_lag` takes: beyond the contact model's own 0.2 s only latency


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
    compile: Optional[bool] = None  # torch.compile the models; None: on with CUDA (realtime.build.compile_for)
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
    motion_lag: float = 0.0  # ms of hindsight for foot contacts (the ground stage's fixed lag); 0: decided at once
    contacts: str = "rules"  # foot contacts decided by "rules" (hand-set gates) or "learned" (the contact model)


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
# An option's own name -> the RunOptions attribute of its group (for `RunOptions.from_names`, the Python door).
GROUP_OF: dict[str, str] = {f.name: group for group, cls in GROUPS.items() for f in dataclasses.fields(cls)}


def option_names() -> tuple[str, ...]:
    """Every option of every group, by its own name (`detect_every`, `no_video`, ...)."""
    return tuple(GROUP_OF)


@dataclass(frozen=True)
class RunOptions:
    """Everything `realtime.run.run()` needs: the source and one object per option group.

        RunOptions(source="clip.mp4", models=ModelOptions(tasks=("pose",)), outputs=OutputOptions(no_video=True))

    Read an option through its group (`options.people.detect_every`); `change` gives a copy
    with some options of some groups changed.
    """

    source: str
    input: SourceOptions = field(default_factory=SourceOptions)
    models: ModelOptions = field(default_factory=ModelOptions)
    people: PeopleOptions = field(default_factory=PeopleOptions)
    smoothing: SmoothingOptions = field(default_factory=SmoothingOptions)
    outputs: OutputOptions = field(default_factory=OutputOptions)
    live_outputs: LiveOutputOptions = field(default_factory=LiveOutputOptions)

    def change(self, *, source: Optional[str] = None, **groups: Mapping[str, Any]) -> "RunOptions":
        """A copy with options changed by group: `options.change(people={"detect_every": 3}, outputs={"no_video": True})`."""
        unknown = [name for name in groups if name not in GROUPS]
        if unknown:
            raise TypeError(f"RunOptions has no option group {unknown[0]!r}; the groups are {', '.join(GROUPS)}")
        new = {name: dataclasses.replace(getattr(self, name), **values) for name, values in groups.items()}
        return dataclasses.replace(self, **new, **({"source": source} if source is not None else {}))

    @classmethod
    def from_names(cls, source: str, names: Mapping[str, Any]) -> "RunOptions":
        """RunOptions from options given by their own names, each put in its group (the Python
        door: `realtime.Session(flip_test=True)`); an unknown name is a TypeError."""
        groups: dict[str, dict[str, Any]] = {}
        for name, value in names.items():
            if name not in GROUP_OF:
                raise TypeError(f"unknown option {name!r}")
            groups.setdefault(GROUP_OF[name], {})[name] = value
        return cls(source=source, **{group: GROUPS[group](**values) for group, values in groups.items()})


# The CLI's flag of each option, where it is not `--` + the name with dashes.
_FLAGS = {"webcam_size": "--width/--height", "webcam_fps": "--fps", "checkpoints": "--checkpoint", "input_hw": "--input-size",
          "pointmap_hw": "--dense-size", "task_sizes": "--dense-size", "dense_auto": "--dense-every",
          "seg_auto": "--seg-every", "progress": "--no-progress", "caption": "--no-caption", "senders": "--vmc/--osc"}


@dataclass(frozen=True)
class Caller:
    """How the door that was used names the options, so that errors name what the caller wrote.

    cli:    the `sapiens-rt` command: `--dense-every 0`; else Python: `dense_every=0`.
    names:  Python argument names that differ from the option's own (`realtime.Session`'s
            `input_size` for `input_hw`).
    """

    cli: bool = False
    names: Mapping[str, str] = field(default_factory=dict)

    def name(self, option: str) -> str:
        """`--dense-every` or `dense_every`."""
        if self.cli:
            return _FLAGS.get(option, "--" + option.replace("_", "-"))
        return self.names.get(option, option)

    def given(self, option: str, value: Any) -> str:
        """The option as the caller gave it: `--dense-every 0`, `--flip-test`, `dense_every=0`."""
        if not self.cli:
            return f"{self.name(option)}={value!r}"
        if value is True:
            return self.name(option)
        if isinstance(value, (tuple, list)) and len(value) == 2 and option.endswith("_hw"):
            value = f"{value[0]}x{value[1]}"
        return f"{self.name(option)} {value}"

    def said(self, option: str, value: Any) -> str:
        """The option with a value the caller gave, as an error quotes it (cut to 60 characters: it may be huge):
        `--vrchat-height 'nan'`, `vrchat_height=nan`."""
        text = repr(str(value) if self.cli else value)
        text = text if len(text) <= 60 else text[:56] + "...'"
        return f"{self.name(option)} {text}" if self.cli else f"{self.name(option)}={text}"


CLI = Caller(cli=True)
PYTHON = Caller()
