"""The inference engine: one frame and its person boxes in, keypoints and
dense maps out, with everything in between on the device.

The frame is uploaded once (pinned memory, non-blocking copy); crops, resizes,
normalization and heatmap decoding run on the device; only keypoints and
small maps come back. On CUDA, pose, segmentation and the dense tasks run on
separate streams so they overlap. Numpy at the edges, tensors inside.
"""

from __future__ import annotations

import functools
import logging
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import numpy as np
import torch
from torch import nn

from realtime import codec, transforms
from realtime import tasks as task_table
from realtime.errors import UserError
from realtime.models import compile_cache, heads
from realtime.models.archs import INPUT_HW
from realtime.models.cuda_graph import GraphCache
from realtime.models.sapiens2 import set_fused_kernels, set_sdpa_backend

log = logging.getLogger(__name__)

NUM_KEYPOINTS = 308


@dataclass
class Prediction:
    """What one frame gives, as numpy arrays.

    keypoints:       (N, K, 2) float32 image pixels (the per-person task, pose).
    keypoint_scores: (N, K) float32.
    maps:            whole-image outputs by task name, e.g. "seg" (h, w) uint8 labels,
                     "normal" (h, w, 3) float32 unit normals, "pointmap" (h, w, 3) metres;
                     only the tasks that ran.
    """

    keypoints: np.ndarray
    keypoint_scores: np.ndarray
    maps: dict[str, np.ndarray] = field(default_factory=dict)

    @property
    def seg(self) -> Optional[np.ndarray]:
        return self.maps.get("seg")

    @property
    def normal(self) -> Optional[np.ndarray]:
        return self.maps.get("normal")

    @property
    def pointmap(self) -> Optional[np.ndarray]:
        return self.maps.get("pointmap")


def default_device() -> str:
    return "cuda" if torch.cuda.is_available() else "cpu"


def default_dtype(device: str) -> torch.dtype:
    """Half precision on CUDA: bf16 where the GPU has it natively (Ampere and later),
    else fp16; fp32 on CPU."""
    if device.startswith("cuda"):
        return torch.bfloat16 if torch.cuda.is_bf16_supported(including_emulation=False) else torch.float16
    return torch.float32


@dataclass
class Launched:
    """A frame whose work is queued (`Predictor.launch`); `Predictor.collect` waits for it.

    outputs: per task, host tensors the device copies into (pinned, on CUDA); read only after `done`.
    done:    event recorded after the copies (CUDA), or None when the work is already done (CPU).
    """

    outputs: dict[str, torch.Tensor]
    done: Optional[torch.cuda.Event]


BATCH_BUCKETS = (1, 2, 3, 4, 6, 8, 12, 16)  # compiled: person crops per forward are padded up to one of these


def recompile_budget(tasks) -> int:
    """Graphs dynamo may compile for one Predictor's models: a per-person task one per bucket
    (plus the out-of-memory fallback's smaller batches), a whole-image task one. The task
    models share `Sapiens2TaskModel.forward`, and dynamo's limit (8) counts per code object:
    pose's buckets + seg + normal + pointmap + albedo would silently fall back to eager."""
    tasks = list(tasks)
    return 2 * sum(len(BATCH_BUCKETS) + 2 if t.per_person else 1 for t in tasks) + 8


class CompiledModel(nn.Module):
    """`torch.compile(model)` called with dynamo's recompile limit raised to at least `graphs` (for the
    call only, so other compiled code in the process keeps its own). Shapes start static; a second
    person bucket makes the batch dynamic (dynamo's automatic dynamic shapes), so pose compiles two
    graphs for every bucket, not one per bucket: the warm-up of a run's eight buckets compiles three
    graphs for pose and seg, and a second launch loads three from the compile cache."""

    def __init__(self, model: nn.Module, *, backend="inductor", options: Optional[dict] = None, graphs: int = 8):
        super().__init__()
        self.compiled = torch.compile(model, dynamic=None, backend=backend, options=options)
        self.graphs = graphs

    @property
    def _orig_mod(self) -> nn.Module:
        return self.compiled._orig_mod

    def forward(self, x: torch.Tensor, *args):
        import torch._dynamo

        limit = max(self.graphs, torch._dynamo.config.recompile_limit)
        with torch._dynamo.config.patch(recompile_limit=limit):
            return self.compiled(x, *args)


class Predictor:
    """Runs the task models on one frame at a time (each task as its `realtime.tasks` row says).

    models:      task name ("pose", "seg", "normal", "pointmap", "albedo", or a registered
                 one) -> model already on `device` in `dtype` (see `realtime.models.load_model`).
                 A task whose row says `resized_in_model` (seg) is called as `model(x, map_hw)`.
    input_hw:    network input size of the tasks that follow `--input-size` (pose crops, seg).
    sizes:       network input size per task, overriding the above and the trained size
                 (the pointmap's scale branch fixes it: 1024x768 for the released models).
    map_max_side: dense maps come back at most this many pixels on their long side.
    flip_test:   average pose heatmaps with the mirrored crop's (the official demo does; 2x cost).
    max_batch:   most person crops per forward; lowered automatically on GPU out-of-memory.
    compile:     torch.compile the models (True, or a torch.compile backend); `warm_up` then
                 compiles every bucket.
    compile_cache: a folder where the compiled kernels are kept between launches (`compile_cache`: a
                 file per GPU, torch, models and settings; `sapiens-rt run` passes the user's cache
                 folder): `warm_up` loads them first, and on a first launch saves them after.
    cuda_graphs: on CUDA, replay one CUDA graph per (task, person bucket) from crop to decoded
                 keypoints (and per frame size from resize to the map), all captured by `warm_up`
                 (`realtime.models.cuda_graph`, which the detector shares): the crops' sampling
                 is then picked per crop on the device, so it is no part of a key and no person
                 count or size meets a key the warm-up did not capture; pads person batches.
                 `graph_report()` lists failed or mid-run captures. Ignored on the CPU.
    pad_batches: pad person crops up to BATCH_BUCKETS so shapes repeat (default: only when
                 compiled; eager runs the crops there are).
    crop_sampling: how person crops are interpolated, picked per batch on the host from the
                 boxes (`transforms.CROP_SAMPLING`): "official" (default) bilinear for crops
                 that shrink the image, bicubic for crops that enlarge it (small people), as
                 the official demo and the golden fixtures; "bilinear" or "bicubic" for all.
    channels_last: run the heads' convolutions channels_last (`heads.to_channels_last`, which
                 changes the given models in place); default on CUDA only.
    sdpa:        the attention kernel of the backbones (`sapiens2.SDPA_BACKENDS`: "default" is
                 PyTorch's choice, "cudnn" cuDNN's fused attention with KV heads expanded, ...;
                 bench/gpu_sdpa.py measures them); changes the given models in place.
    fp8:         the backbones' linear layers in E4M3 (`realtime.models.fp8`): True or "attention" the
                 attention projections (q/k/v as one GEMM, static input scales calibrated here once
                 on `fp8.calibration_batch`), "ffn" the FFN's (per-token x per-channel scales),
                 "attention+ffn" both; needs `compile` (it is slower than bf16 eager).
    dual:        when pose and seg run on the same frame with one pose crop, their two backbones run as one
                 (`realtime.models.dual`: stacked weights as batched GEMMs, one attention call of batch 2,
                 each model's own norms and heads), on pose's stream; other frames run the models apart.
                 Needs pose and seg of one size at one input size; off by default until measured on a GPU.
    fuse:        the backbones' SwiGLU product in w12's GEMM epilogue and (not compiled) each residual add with
                 the next RMSNorm as one pass (`realtime.models.triton_fused`, CUDA); off by default until
                 measured. Frames through the dual backbone run without them.

    On CUDA a frame costs one host wait: the frame and the box geometry go up in pinned,
    non-blocking copies on an upload stream; each task runs on its own stream, linked to the
    upload by an event; the outputs come back in non-blocking copies into pinned memory,
    and the host waits once, for all of them. `launch` queues a frame and `collect` waits for
    it, so a pipeline can queue frame N+1 before it collects frame N.
    """

    def __init__(self, models: dict[str, nn.Module], *, device: str = "cpu", dtype: torch.dtype = torch.float32,
                 input_hw: Optional[tuple[int, int]] = None, sizes: Optional[dict[str, tuple[int, int]]] = None,
                 map_max_side: int = 512, flip_test: bool = False, max_batch: int = 16, compile=False,
                 pad_batches: Optional[bool] = None, cuda_graphs: bool = False, crop_sampling: str = "official",
                 channels_last: Optional[bool] = None, sdpa: str = "default", fp8: "bool | str" = False, dual: bool = False,
                 fuse: bool = False, compile_cache: "Optional[str | Path]" = None):
        self.tasks = {name: task_table.row(name) for name in models}  # a user error for unknown names
        self.device = torch.device(device)
        self.dtype = dtype
        self.sizes = {name: tuple((sizes or {}).get(name) or (input_hw if t.follows_input_size and input_hw else None)
                                  or trained_hw(models[name], t.input_hw)) for name, t in self.tasks.items()}
        following = [self.sizes[name] for name, t in self.tasks.items() if t.follows_input_size]
        self.input_hw = tuple(input_hw or (following[0] if following else INPUT_HW))
        self.map_max_side = map_max_side
        self.flip_test = flip_test
        self.max_batch = max_batch
        self.cuda = self.device.type == "cuda"
        if crop_sampling not in transforms.CROP_SAMPLING:
            raise ValueError(f"crop_sampling must be one of {transforms.CROP_SAMPLING}, got {crop_sampling!r}")
        self.crop_sampling = crop_sampling
        self.channels_last = self.cuda if channels_last is None else bool(channels_last)
        if self.channels_last:  # before compiling: the graphs see the layout
            for model in models.values():
                heads.to_channels_last(model)
        for model in models.values():
            set_sdpa_backend(model, sdpa)
            if fuse:  # compiled, inductor fuses each residual add and norm itself (and with more of their neighbours)
                set_fused_kernels(model, norms=not compile)
        if fp8:
            from realtime.models import fp8 as float8

            scope = "attention" if fp8 is True else fp8
            if scope not in float8.CHOICES:
                raise ValueError(f"fp8 must be True or one of {', '.join(float8.CHOICES)}, got {fp8!r}")
            float8.check_fp8_compiled(bool(compile))
            for name, model in models.items():
                float8.to_float8(model, scope)
                dtype_of = next(model.parameters()).dtype
                float8.calibrate(model, [float8.calibration_batch(self.sizes[name], self.device, dtype_of)])
        self.dual_model = self._make_dual(models, flip_test) if dual else None
        self.compiled = bool(compile)
        self.compile_cache = Path(compile_cache) if compile_cache is not None and compile else None
        self.compile_cache_loaded = False  # whether `warm_up` loaded the models' kernels from the cache
        backend_name = "inductor" if compile is True else getattr(compile, "__name__", str(compile))
        self._settings = {  # what makes compiled graphs differ: the compile cache keeps a file per set of them
            "models": {name: [type(m).__name__, getattr(m, "arch", ""), str(getattr(next(m.parameters(), None), "dtype", None))]
                       for name, m in models.items()},
            "sizes": self.sizes, "backend": backend_name, "sdpa": sdpa, "fp8": str(fp8), "dual": dual, "fuse": fuse,
            "flip_test": flip_test, "cuda_graphs": bool(cuda_graphs), "channels_last": self.channels_last,
            "crop_sampling": crop_sampling}
        if compile:
            for name, model in models.items():  # RoPE tables made now, eagerly: no graph break at the first call
                _set_input_size(model, self.sizes[name])
            backend = "inductor" if compile is True else compile
            # Round bf16 intermediates as eager does: fused in fp32, the bf16 RoPE rotation
            # drifts past the golden fixtures' tolerance (bench/RESULTS.md). Set per
            # compiled model, not in inductor's global config, which other code in the process shares.
            options = {"emulate_precision_casts": True} if backend == "inductor" else None
            graphs = recompile_budget(self.tasks.values())
            models = {name: CompiledModel(model, backend=backend, options=options, graphs=graphs)
                      for name, model in models.items()}
            if self.dual_model is not None:
                self.dual_model = CompiledModel(self.dual_model, backend=backend, options=options, graphs=graphs)
        self.models = models
        # Fixed batch shapes pay off only for compiled graphs; an eager run (CPU or CUDA)
        # would only compute the padding (3 people would cost 4 forwards).
        self.cuda_graphs = bool(cuda_graphs) and self.device.type == "cuda"
        self._graphs = GraphCache()  # (task, shapes) -> graph; one memory pool per task stream
        self.padded = (self.compiled or self.cuda_graphs) if pad_batches is None else pad_batches
        self._streams: dict[str, torch.cuda.Stream] = {}
        if self.cuda:
            if self.device.index is None:  # as tensors report it, so per-device constant caches hit
                self.device = torch.device("cuda", torch.cuda.current_device())
            torch.backends.cudnn.benchmark = True  # shapes repeat (buckets): pick the fastest kernels once
            loaded = torch.cuda.current_stream(self.device)  # where the weights were copied
            self._streams = {name: torch.cuda.Stream(self.device) for name in [*models, "upload", "collect"]}
            for stream in self._streams.values():
                stream.wait_stream(loaded)
        self._flip = {name: torch.as_tensor(t.flip_indices(), device=self.device)
                      for name, t in self.tasks.items() if t.per_person and t.flip_indices is not None}
        codec.make_constants(self.device)
        transforms.make_constants(self.device, self.sizes.values())

    def buckets(self) -> tuple[int, ...]:
        """The person counts a forward is padded to (at most `max_batch`)."""
        return tuple(sorted({b for b in BATCH_BUCKETS if b < self.max_batch} | {self.max_batch}))

    def warm_up(self, image_hw: tuple[int, int]) -> None:
        """Predictions on a black frame, so the first real frame does not pay for kernel
        selection, allocator growth, compilation or a CUDA graph capture. When batches are
        padded (compiled, graphs), every person-count bucket runs once, so `--compile` never
        compiles and `--cuda-graphs` never captures mid-run (`graph_report` tells if one did)."""
        h, w = image_hw
        black = np.zeros((h, w, 3), np.uint8)
        whole = np.array([[0, 0, w - 1, h - 1]], np.float32)
        cache = self._load_compiled(image_hw) if self.compiled else None
        self.predict(black, whole)
        if self.dual_model is not None:  # the frames that run pose or seg alone meet the single models' keys
            self.predict(black, whole, tasks={"pose"})
            self.predict(black, whole[:0], tasks={"seg"})
        per_person = {name for name, t in self.tasks.items() if t.per_person}
        if self.padded and per_person:
            for n in self.buckets()[1:]:
                self.predict(black, np.repeat(whole, n, axis=0), tasks=per_person)
        self._graphs.seal()
        if self.cuda:
            torch.cuda.synchronize(self.device)
        self.compile_cache_loaded = bool(cache and cache[1])
        if cache is not None and not cache[1]:  # a first launch with these settings: keep what was compiled
            compile_cache.save(cache[0])

    def _load_compiled(self, image_hw: tuple[int, int]) -> "Optional[tuple[Path, bool]]":
        """Before compiling: load the kernels a launch with these settings saved (returns their file and whether they
        loaded), and say in one line why a first launch waits."""
        path = None
        if self.compile_cache is not None:
            device = torch.cuda.get_device_name(self.device) if self.cuda else "cpu"
            path = compile_cache.artifacts_path(self.compile_cache, {**self._settings, "device": device,
                                                                     "image_hw": list(image_hw),
                                                                     "buckets": list(self.buckets())})
            if compile_cache.load(path):
                log.info("compiled models loaded from %s", path)
                return path, True
        log.warning("compiling the models (%s) for this %s and these settings, which makes them run their fastest: this "
                    "launch waits for it, about two minutes on an H100%s", ", ".join(self.models),
                    "GPU" if self.cuda else "device", f"; later launches load them from {path.parent}" if path else "")
        return (path, False) if path else None

    def graph_report(self) -> list[str]:
        """Run-summary warnings about CUDA graphs: captures that failed (those keys run eagerly,
        with the reason) and captures after the warm-up (each one stalled the run)."""
        return self._graphs.report("inference") if self.cuda_graphs else []

    def predict(self, image: np.ndarray, boxes: np.ndarray, tasks: Optional[set[str]] = None) -> Prediction:
        """image: (H, W, 3) uint8 RGB; boxes: (N, 4) xyxy pixels; tasks: which of the
        loaded models to run this time (default all). `collect(launch(...))`."""
        return self.collect(self.launch(image, boxes, tasks))

    @torch.inference_mode()
    def launch(self, image: np.ndarray, boxes: np.ndarray, tasks: Optional[set[str]] = None) -> Launched:
        """Queue a frame's work, including the copies of its outputs into pinned host memory,
        and return without waiting for the GPU (on the CPU the work is done on return). Launch
        frame N+1 before collecting frame N and the GPU never idles while Python catches up."""
        wanted = set(self.models) if tasks is None else tasks & set(self.models)
        run = [t for t in task_table.ordered(wanted) if not (t.per_person and len(boxes) == 0)]
        h, w = image.shape[:2]
        map_hw = _fit(h, w, self.map_max_side)
        plans = {t.name: self._plan(t, boxes) for t in run if t.per_person}
        frame, geometry = self._upload(image, plans)
        outputs: dict[str, torch.Tensor] = {}
        made_on: dict[str, str] = {}  # output -> the stream that makes it
        dual = self._dual_fits(run, plans)
        for task in run:  # launch all, then download all
            if dual and task.name == "seg":
                continue  # made with pose
            with self._on_stream(task.name, frame, geometry):
                if dual and task.name == "pose":
                    outputs["pose"], outputs["seg"] = self._dual(frame, plans["pose"], geometry["pose"], map_hw)
                    made_on["seg"] = "pose"
                elif task.per_person:
                    outputs[task.name] = self._persons(task, frame, boxes, plans[task.name], geometry)
                else:
                    outputs[task.name] = self._whole_image(task, frame, map_hw)
        return self._download(outputs, made_on)

    def collect(self, launched: Launched) -> Prediction:
        """Wait for a launched frame (the frame's only host wait, on CUDA: a blocking event, so
        the waiting thread sleeps instead of spinning) and hand its outputs back as numpy."""
        if launched.done is not None:
            launched.done.synchronize()  # the frame's only host wait
        host = {name: t.numpy() for name, t in launched.outputs.items()}
        person = next((host[t.name] for t in self.tasks.values() if t.per_person and t.name in host), None)
        if person is None:  # nobody in the frame, or pose not asked for
            kpts, scores = np.zeros((0, NUM_KEYPOINTS, 2), np.float32), np.zeros((0, NUM_KEYPOINTS), np.float32)
        else:
            kpts, scores = person[..., :2].astype(np.float32), person[..., 2].astype(np.float32)
        maps = {name: out for name, out in host.items() if not self.tasks[name].per_person}
        return Prediction(kpts, scores, maps)

    # -- per task, all on the device

    def _plan(self, task, boxes: np.ndarray) -> tuple[np.ndarray, list[tuple[int, int, int, Optional[str]]]]:
        """Host geometry of the person crops: (M, 4) float32 rows center | scale, per chunk of
        `max_batch` boxes (padded up to a bucket when `self.padded`), and the chunks as
        (first box, boxes, rows, sampling): the crops' interpolation, picked here from the
        scales (`transforms.crop_sampling`), so the device samples only what is used."""
        boxes = np.asarray(boxes, np.float32).copy()
        boxes[:, 2:] = np.maximum(boxes[:, 2:], boxes[:, :2] + 1.0)  # a degenerate box (1x1 image) still crops
        center, scale = transforms.box_to_center_scale_np(boxes, self.sizes[task.name])
        rows = np.concatenate((center, scale), axis=1)
        chunks, parts = [], []
        for start in range(0, len(rows), self.max_batch):
            part = rows[start:start + self.max_batch]
            bucket = min(b for b in self.buckets() if b >= len(part)) if self.padded else len(part)
            parts.append(np.concatenate((part, np.repeat(part[:1], bucket - len(part), axis=0))))  # copies of a real box
            sampling = transforms.crop_sampling(part[:, 2:], self.sizes[task.name], self.crop_sampling)
            chunks.append((start, len(part), bucket, sampling))
        return np.concatenate(parts), chunks

    def _persons(self, task, frame: torch.Tensor, boxes: np.ndarray, plan, geometry) -> torch.Tensor:
        """(N, K, 3) float32: x, y in image pixels and the score."""
        while True:
            try:
                return self._persons_batched(task, frame, plan[1], geometry[task.name])
            except torch.cuda.OutOfMemoryError:
                self._shrink_batch(min(self.max_batch, len(boxes)))
                plan = self._plan(task, boxes)  # new chunks: their geometry goes up again (a rare path)
                geometry = {task.name: torch.as_tensor(plan[0], device=self.device)}

    def _persons_batched(self, task, frame: torch.Tensor, chunks, geometry: torch.Tensor) -> torch.Tensor:
        results, offset = [], 0
        for _, count, bucket, sampling in chunks:
            rows = geometry[offset:offset + bucket]  # center | scale
            offset += bucket
            if self.cuda_graphs and task.host_sampling:  # one graph per bucket: sampled per crop on the device
                sampling = None if self.crop_sampling == "official" else self.crop_sampling
            key = (task.name, bucket, tuple(frame.shape))
            results.append(self._run(key, functools.partial(self._person_work, task, sampling), frame, rows)[:count])
        return torch.cat(results) if len(results) > 1 else results[0]

    def _person_work(self, task, sampling: Optional[str], frame: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
        """(B, K, 3) from the frame and B rows of crop geometry: crop, model, decode."""
        input_hw = self.sizes[task.name]
        center, scale = rows[:, :2], rows[:, 2:]
        chosen = {"sampling": sampling} if task.host_sampling else {}
        x = task.preprocess(frame, center, scale, input_hw, **chosen).to(self.dtype)
        if self.flip_test and task.name in self._flip:
            heatmaps = codec.flip_test(self.models[task.name], x, self._flip[task.name])
        else:
            heatmaps = self.models[task.name](x)
        # decode in float32: half-precision argmax ties and log() of small values are coarse
        return task.postprocess(heatmaps.float(), (center, scale), input_hw)

    def _make_dual(self, models: dict[str, nn.Module], flip_test: bool) -> nn.Module:
        """The pose and seg backbones as one (`realtime.models.dual`), or a user error saying why not."""
        from realtime.models.dual import DualTaskModel, dual_refusal

        if not {"pose", "seg"} <= set(models):
            raise UserError("dual=True (--dual-backbone) runs the pose and seg backbones as one: it needs both tasks; add "
                            "pose and seg to the tasks or drop it.")
        why = dual_refusal(getattr(models["pose"], "backbone", None), getattr(models["seg"], "backbone", None))
        if why is None and self.sizes["pose"] != self.sizes["seg"]:
            why = f"pose runs at {self.sizes['pose']} and seg at {self.sizes['seg']}"
        if why is None and flip_test:
            why = "the flip test runs pose twice"
        if why is not None:
            raise UserError(f"dual=True (--dual-backbone) cannot run these models as one: {why}; drop it.")
        return DualTaskModel(models["pose"], models["seg"])

    def _dual_fits(self, run, plans) -> bool:
        """Whether this frame runs pose and seg through the dual backbone: both asked for and one pose crop (the seg
        image's batch; more people run the models apart)."""
        if self.dual_model is None or not {"pose", "seg"} <= {t.name for t in run}:
            return False
        chunks = plans["pose"][1]
        return len(chunks) == 1 and chunks[0][2] == 1

    def _dual(self, frame: torch.Tensor, plan, geometry: torch.Tensor, map_hw: tuple[int, int]):
        """(pose (1, K, 3), seg map) through the dual backbone, as `_persons` and `_whole_image` make them."""
        pose, seg = self.tasks["pose"], self.tasks["seg"]
        _, _, bucket, sampling = plan[1][0]
        if self.cuda_graphs and pose.host_sampling:  # one graph: sampled per crop on the device
            sampling = None if self.crop_sampling == "official" else self.crop_sampling
        key = ("dual", bucket, tuple(frame.shape), map_hw)
        try:
            return self._run(key, functools.partial(self._dual_work, pose, seg, sampling, map_hw), frame, geometry[:bucket])
        except torch.cuda.OutOfMemoryError:
            raise UserError("The GPU ran out of memory running pose and seg as one backbone; drop dual=True "
                            "(--dual-backbone), lower --input-size, or turn off tasks with --tasks.") from None

    def _dual_work(self, pose, seg, sampling: Optional[str], map_hw: tuple[int, int], frame: torch.Tensor,
                   rows: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """`_person_work` and `_image_work` of pose and seg, their backbones run as one."""
        input_hw = self.sizes["pose"]
        center, scale = rows[:, :2], rows[:, 2:]
        chosen = {"sampling": sampling} if pose.host_sampling else {}
        x_pose = pose.preprocess(frame, center, scale, input_hw, **chosen).to(self.dtype)
        x_seg, meta = seg.preprocess(frame, self.sizes["seg"])
        heatmaps, raw = self.dual_model(x_pose, x_seg.to(self.dtype), map_hw if seg.resized_in_model else None)
        return pose.postprocess(heatmaps.float(), (center, scale), input_hw), seg.postprocess(raw.float(), meta, map_hw)

    def _image_work(self, task, map_hw: tuple[int, int], frame: torch.Tensor) -> torch.Tensor:
        x, meta = task.preprocess(frame, self.sizes[task.name])
        model = self.models[task.name]
        raw = model(x.to(self.dtype), map_hw) if task.resized_in_model else model(x.to(self.dtype))
        raw = tuple(r.float() for r in raw) if isinstance(raw, tuple) else raw.float()
        return task.postprocess(raw, meta, map_hw)

    def _run(self, key: tuple, work, *inputs: torch.Tensor) -> torch.Tensor:
        """`work(*inputs)` eagerly, or with `cuda_graphs` by replaying the graph captured for
        `key` (task, shapes), captured by `warm_up` (or on a first use after it, counted late)."""
        if not self.cuda_graphs:
            return work(*inputs)
        pool = "pose" if key[0] == "dual" else key[0]  # one memory pool per task stream (the dual runs on pose's)
        return self._graphs.run(key, pool, work, *inputs)

    def _shrink_batch(self, tried: int) -> None:
        torch.cuda.empty_cache()
        if tried <= 1:
            raise UserError("The GPU ran out of memory on a single person crop; lower --input-size, "
                            "turn off tasks with --tasks, or use --dtype fp16/bf16.")
        self.max_batch = max(1, tried // 2)
        log.warning("GPU out of memory: pose batch lowered to %d crops", self.max_batch)

    def _whole_image(self, task, frame: torch.Tensor, map_hw: tuple[int, int]) -> torch.Tensor:
        for attempt in (1, 2):
            try:
                key = (task.name, tuple(frame.shape), map_hw)
                return self._run(key, functools.partial(self._image_work, task, map_hw), frame)
            except torch.cuda.OutOfMemoryError:
                torch.cuda.empty_cache()  # cached blocks of other shapes may be all it needed
                if attempt == 2:
                    raise UserError(f"The GPU ran out of memory running {task.name}; turn it off with --tasks, "
                                    f"lower --input-size, or use --dtype fp16/bf16.") from None

    # -- transfers

    def _upload(self, image: np.ndarray, plans: dict) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """The frame (3, H, W) uint8 and each per-person task's crop geometry on the device."""
        image = np.ascontiguousarray(image)
        if not self.cuda:
            return torch.from_numpy(image).permute(2, 0, 1), {name: torch.from_numpy(p[0]) for name, p in plans.items()}
        host = torch.empty(image.shape, dtype=torch.uint8, pin_memory=True)  # recycled by the pinned allocator
        host.numpy()[...] = image
        geometry = {}
        with torch.cuda.stream(self._streams["upload"]):
            frame = host.to(self.device, non_blocking=True).permute(2, 0, 1)
            if plans:
                rows = np.concatenate([p[0] for p in plans.values()])
                pinned = torch.empty(rows.shape, dtype=torch.float32, pin_memory=True)
                pinned.numpy()[...] = rows
                on_device = pinned.to(self.device, non_blocking=True)  # all tasks' boxes in one copy
                offset = 0
                for name, (task_rows, _) in plans.items():
                    geometry[name] = on_device[offset:offset + len(task_rows)]
                    offset += len(task_rows)
        return frame, geometry

    def _on_stream(self, task: str, frame: torch.Tensor, geometry: dict[str, torch.Tensor]):
        if not self.cuda:
            return nullcontext()
        stream = self._streams[task]
        stream.wait_stream(self._streams["upload"])  # an event recorded on the upload stream
        frame.record_stream(stream)  # made on the upload stream, read here: not recycled before this reads it
        if task in geometry:
            geometry[task].record_stream(stream)
        return torch.cuda.stream(stream)

    def _download(self, outputs: dict[str, torch.Tensor], made_on: Optional[dict[str, str]] = None) -> Launched:
        """Queue each output's copy into its own pinned host buffer on the collect stream (each
        frame in flight owns its buffers; the pinned allocator recycles a buffer only after the
        copy into it is done), and an event after the copies. `made_on`: outputs made on another
        task's stream (the dual backbone's seg, on pose's)."""
        if not self.cuda:
            return Launched(outputs, None)
        collect = self._streams["collect"]
        pinned = {}
        for output, out in outputs.items():
            name = (made_on or {}).get(output, output)  # the stream that made it
            collect.wait_stream(self._streams[name])
            out.record_stream(collect)
            pinned[output] = torch.empty(out.shape, dtype=out.dtype, pin_memory=True)
            with torch.cuda.stream(collect):
                pinned[output].copy_(out, non_blocking=True)
        done = torch.cuda.Event(blocking=True)
        done.record(collect)
        return Launched(pinned, done)


def trained_hw(model: nn.Module, default: tuple[int, int]) -> tuple[int, int]:
    """The input size a loaded model was trained at, as its checkpoint declares it
    (`realtime.models.loading.declared_input_hw`), else `default` (the task's registry size)."""
    return tuple(getattr(model, "trained_hw", None) or default)


def _set_input_size(model: nn.Module, input_hw: tuple[int, int]) -> None:
    """`Sapiens2.set_input_size` on the model's backbone, if it has one (a registered task's
    model may not)."""
    backbone = getattr(model, "backbone", None)
    if hasattr(backbone, "set_input_size"):
        backbone.set_input_size(*input_hw)


def _fit(h: int, w: int, max_side: int) -> tuple[int, int]:
    """(h, w) scaled down so the long side is at most `max_side` (never up)."""
    s = min(1.0, max_side / max(h, w))
    return max(1, round(h * s)), max(1, round(w * s))
