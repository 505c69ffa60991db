"""RTMDet person detector (CSPNeXt backbone, CSPNeXt-PAFPN neck, separate-BN head)
in plain PyTorch, loading the official mmdet checkpoint unchanged.

Module attribute paths equal mmdet's state-dict keys (`backbone.stage2.1.blocks.0.conv1.conv.weight`),
so the released `rtmdet_m_8xb32-100e_coco-obj365-person-235e8209.pth` loads strictly.
Facts and pitfalls: docs/numerics.md, "Person detector (RTMDet)" (sections in comments below).
"""

from __future__ import annotations

import functools
import logging
import os
from pathlib import Path
from typing import Optional

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.utils.fusion import fuse_conv_bn_eval

from realtime.errors import UserError
from realtime.models import rtmdet_post as post
from realtime.models.checkpoint import load_strict, read_state_dict
from realtime.models.cuda_graph import GraphCache
from realtime.models.hub import DETECTOR_FILENAME, DETECTOR_REPO, resolve_file

log = logging.getLogger(__name__)

DETECTOR_ROOT_RELATIVE = "detector/rtmdet_m.pth"  # the Sapiens2 docs' layout under $SAPIENS_CHECKPOINT_ROOT
DETECTOR_FETCH_COMMAND = "sapiens-rt download --tasks detector"
DEEPEN = 0.67  # RTMDet-m depth factor
BN_EPS = 1e-5  # SyncBN defaults replace the module defaults (docs/numerics.md, "Network"); eps is not in the checkpoint


class ConvModule(nn.Module):
    """Conv (no bias) -> BatchNorm -> SiLU ("CBS")."""

    def __init__(self, cin: int, cout: int, kernel: int, stride: int = 1, groups: int = 1) -> None:
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, kernel, stride, kernel // 2, groups=groups, bias=False)
        self.bn = nn.BatchNorm2d(cout, eps=BN_EPS)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.silu(self.bn(self.conv(x)))


def fold_batchnorm(model: nn.Module) -> int:
    """Fold every ConvModule's BatchNorm into its conv, in place (eval only: uses the running
    statistics); returns how many were folded. Each module gets its own fused conv, so the
    head's shared convs become one copy per level, each with that level's BatchNorm folded in.
    Saves one op per ConvModule per forward (and its read and write of the activation)."""
    if model.training:
        raise ValueError("fold_batchnorm needs a model in eval mode (call .eval() first): it freezes the running statistics")
    folded = 0
    for module in model.modules():
        if isinstance(module, ConvModule) and isinstance(module.bn, nn.BatchNorm2d):
            module.conv = fuse_conv_bn_eval(module.conv, module.bn)
            module.bn = nn.Identity()
            folded += 1
    return folded


class DepthwiseSeparableConvModule(nn.Module):
    """Depthwise CBS (k x k) then pointwise CBS (1 x 1)."""

    def __init__(self, cin: int, cout: int, kernel: int) -> None:
        super().__init__()
        self.depthwise_conv = ConvModule(cin, cin, kernel, groups=cin)
        self.pointwise_conv = ConvModule(cin, cout, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.pointwise_conv(self.depthwise_conv(x))


class CSPNeXtBlock(nn.Module):
    """3x3 CBS then 5x5 depthwise-separable CBS, with an optional residual."""

    def __init__(self, channels: int, add_identity: bool) -> None:
        super().__init__()
        self.conv1 = ConvModule(channels, channels, 3)
        self.conv2 = DepthwiseSeparableConvModule(channels, channels, 5)
        self.add_identity = add_identity

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.conv2(self.conv1(x))
        return out + x if self.add_identity else out


class ChannelAttention(nn.Module):
    """Global average -> 1x1 conv (with bias) -> hard sigmoid -> channel gate."""

    def __init__(self, channels: int) -> None:
        super().__init__()
        self.fc = nn.Conv2d(channels, channels, 1, bias=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * F.hardsigmoid(self.fc(F.adaptive_avg_pool2d(x, 1)))


class CSPLayer(nn.Module):
    """Cross-stage-partial layer: CSPNeXt blocks on half the channels, concat [main, short]."""

    def __init__(self, cin: int, cout: int, num_blocks: int, *, add_identity: bool, channel_attention: bool) -> None:
        super().__init__()
        mid = int(cout * 0.5)
        self.main_conv = ConvModule(cin, mid, 1)
        self.short_conv = ConvModule(cin, mid, 1)
        self.final_conv = ConvModule(2 * mid, cout, 1)
        self.blocks = nn.Sequential(*[CSPNeXtBlock(mid, add_identity) for _ in range(num_blocks)])
        self.attention = ChannelAttention(2 * mid) if channel_attention else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.cat([self.blocks(self.main_conv(x)), self.short_conv(x)], dim=1)
        if self.attention is not None:
            y = self.attention(y)
        return self.final_conv(y)


class SPPBottleneck(nn.Module):
    """1x1 CBS, concat with 5/9/13 max-pools (stride 1), 1x1 CBS."""

    def __init__(self, channels: int, kernels: tuple[int, ...] = (5, 9, 13)) -> None:
        super().__init__()
        mid = channels // 2
        self.conv1 = ConvModule(channels, mid, 1)
        self.conv2 = ConvModule(mid * (len(kernels) + 1), channels, 1)
        self.kernels = kernels

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.conv1(x)
        pooled = [F.max_pool2d(x, k, stride=1, padding=k // 2) for k in self.kernels]
        return self.conv2(torch.cat([x, *pooled], dim=1))


class CSPNeXt(nn.Module):
    """CSPNeXt-P5 backbone (docs/numerics.md, "Network"). Returns (C3, C4, C5) at strides 8, 16, 32."""

    # (input, output, blocks, add_identity, spp) per stage, before the width/depth factors
    ARCH = ((64, 128, 3, True, False), (128, 256, 6, True, False), (256, 512, 6, True, False), (512, 1024, 3, False, True))

    def __init__(self, widen: float, deepen: float = DEEPEN) -> None:
        super().__init__()
        stem = int(64 * widen // 2)
        self.stem = nn.Sequential(ConvModule(3, stem, 3, 2), ConvModule(stem, stem, 3), ConvModule(stem, int(64 * widen), 3))
        for i, (cin, cout, blocks, identity, spp) in enumerate(self.ARCH, start=1):
            cin, cout = int(cin * widen), int(cout * widen)
            layers = [ConvModule(cin, cout, 3, 2)]
            if spp:
                layers.append(SPPBottleneck(cout))
            num = max(round(blocks * deepen), 1)
            layers.append(CSPLayer(cout, cout, num, add_identity=identity, channel_attention=True))
            self.add_module(f"stage{i}", nn.Sequential(*layers))

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        x = self.stage1(self.stem(x))
        c3 = self.stage2(x)
        c4 = self.stage3(c3)
        return c3, c4, self.stage4(c4)


class CSPNeXtPAFPN(nn.Module):
    """Top-down then bottom-up path aggregation (docs/numerics.md, "Network"). Returns (N3, N4, N5), `out_channels` each."""

    def __init__(self, in_channels: tuple[int, int, int], out_channels: int, num_blocks: int) -> None:
        super().__init__()
        c3, c4, c5 = in_channels

        def csp(cin: int, cout: int) -> CSPLayer:
            return CSPLayer(cin, cout, num_blocks, add_identity=False, channel_attention=False)

        self.reduce_layers = nn.ModuleList([ConvModule(c5, c4, 1), ConvModule(c4, c3, 1)])
        self.top_down_blocks = nn.ModuleList([csp(2 * c4, c4), csp(2 * c3, c3)])
        self.downsamples = nn.ModuleList([ConvModule(c3, c3, 3, 2), ConvModule(c4, c4, 3, 2)])
        self.bottom_up_blocks = nn.ModuleList([csp(2 * c3, c4), csp(2 * c4, c5)])
        self.out_convs = nn.ModuleList([ConvModule(c, out_channels, 3) for c in in_channels])

    def forward(self, feats: tuple[torch.Tensor, torch.Tensor, torch.Tensor]) -> tuple[torch.Tensor, ...]:
        c3, c4, c5 = feats
        r5 = self.reduce_layers[0](c5)
        t4 = self.top_down_blocks[0](torch.cat([F.interpolate(r5, scale_factor=2.0, mode="nearest"), c4], 1))
        r4 = self.reduce_layers[1](t4)
        p3 = self.top_down_blocks[1](torch.cat([F.interpolate(r4, scale_factor=2.0, mode="nearest"), c3], 1))
        # The bottom-up path concatenates the *reduced* r4 and r5.
        p4 = self.bottom_up_blocks[0](torch.cat([self.downsamples[0](p3), r4], 1))
        p5 = self.bottom_up_blocks[1](torch.cat([self.downsamples[1](p4), r5], 1))
        return tuple(conv(p) for conv, p in zip(self.out_convs, (p3, p4, p5)))


class RTMDetSepBNHead(nn.Module):
    """Per-level cls/reg towers whose 3x3 conv weights are shared across levels
    while each level keeps its own BatchNorm (docs/numerics.md, "Network")."""

    def __init__(self, channels: int, num_classes: int = 1, stacked_convs: int = 2,
                 strides: tuple[int, ...] = post.STRIDES) -> None:
        super().__init__()
        self.strides = strides
        levels = range(len(strides))
        self.cls_convs = nn.ModuleList([nn.ModuleList([ConvModule(channels, channels, 3) for _ in range(stacked_convs)])
                                        for _ in levels])
        self.reg_convs = nn.ModuleList([nn.ModuleList([ConvModule(channels, channels, 3) for _ in range(stacked_convs)])
                                        for _ in levels])
        for level in levels:
            for i in range(stacked_convs):
                self.cls_convs[level][i].conv = self.cls_convs[0][i].conv
                self.reg_convs[level][i].conv = self.reg_convs[0][i].conv
        self.rtm_cls = nn.ModuleList([nn.Conv2d(channels, num_classes, 1) for _ in levels])
        self.rtm_reg = nn.ModuleList([nn.Conv2d(channels, 4, 1) for _ in levels])

    def forward(self, feats: tuple[torch.Tensor, ...]) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
        """Returns per level class logits (N, C, H, W) and (left, top, right, bottom)
        distances (N, 4, H, W) in input pixels, both float32 whatever the network dtype."""
        logits, dists = [], []
        for level, x in enumerate(feats):
            cls_feat, reg_feat = x, x
            for layer in self.cls_convs[level]:
                cls_feat = layer(cls_feat)
            for layer in self.reg_convs[level]:
                reg_feat = layer(reg_feat)
            logits.append(self.rtm_cls[level](cls_feat).float())
            # exp and stride in float32: in fp16, exp(r) * 32 overflows for r > ~7.6.
            dists.append(self.rtm_reg[level](reg_feat).float().exp() * self.strides[level])
        return logits, dists


class RTMDet(nn.Module):
    """RTMDet with a 1-class head. `widen` 0.75 is the m size (the fixtures use 0.25)."""

    def __init__(self, widen: float = 0.75, deepen: float = DEEPEN, num_classes: int = 1) -> None:
        super().__init__()
        neck_in = (int(256 * widen), int(512 * widen), int(1024 * widen))
        self.backbone = CSPNeXt(widen, deepen)
        self.neck = CSPNeXtPAFPN(neck_in, neck_in[0], max(round(3 * deepen), 1))
        self.bbox_head = RTMDetSepBNHead(neck_in[0], num_classes)

    def forward(self, x: torch.Tensor) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
        """x: (N, 3, 640, 640) normalized BGR. Returns per-level logits and distances (float32)."""
        return self.bbox_head(self.neck(self.backbone(x)))


DETECTOR_STREAM_PRIORITY = -1  # lower is sooner; CUDA maps it into the device's range (0 is the default)


class Detector:
    """A loaded RTMDet with the official pre- and post-processing.

    Call it on one frame: `boxes, scores = det(image_bgr)`; boxes (N, 4) float32
    xyxy image pixels, scores (N,) float32, after the Sapiens2 demo's selection
    (score > 0.3, greedy NMS at IoU 0.3). When nothing passes, both are empty
    ((0, 4) and (0,)); the demo's whole-frame fallback is the box finder's job.

    cuda_graphs: on CUDA, replay one CUDA graph per frame size from the uploaded frame to
    the top-100 candidates (letterbox, the network at its fixed 640x640 input, decoding),
    captured on the first call by the calling thread (`realtime.models.cuda_graph`); a call
    is then the upload, a copy into the graph's input, the replay, and the download.
    Ignored on the CPU.
    """

    def __init__(self, model: RTMDet, *, device: torch.device | str = "cpu", dtype: torch.dtype = torch.float32,
                 cuda_graphs: bool = False) -> None:
        self.model = model.to(device=device, dtype=dtype).eval()
        self.device = torch.device(device)
        self.dtype = dtype
        self.cuda = self.device.type == "cuda"
        self.cuda_graphs = bool(cuda_graphs) and self.cuda
        self._graphs = GraphCache()  # (frame shape, rgb) -> graph, in one memory pool (the detector's stream)
        # Its own stream, so a detection overlaps the task models' streams instead of
        # queueing behind them on the default stream; high priority, so its few small kernels
        # go first whenever the GPU is busy with a backbone (the next frame's crops wait on it).
        self.stream = torch.cuda.Stream(self.device, priority=DETECTOR_STREAM_PRIORITY) if self.cuda else None
        self._pinned: dict[str, torch.Tensor] = {}  # host buffers the GPU copies from / into
        if self.cuda:
            if self.device.index is None:  # as tensors report it, so per-device caches hit
                self.device = torch.device("cuda", torch.cuda.current_device())
            post.mean_std(self.device)  # made now, not with the first frame

    def warm_up(self, image_hw: tuple[int, int], *, rgb: bool = True) -> None:
        """One call on a black frame of the run's size, so the first detection pays for no kernel
        choice or allocation, and with `cuda_graphs` no capture: the graph of that frame size is
        captured here (by the calling thread; later calls replay it from any thread)."""
        self.raw(np.zeros((*image_hw, 3), np.uint8), rgb=rgb)
        self._graphs.seal()

    def graph_report(self) -> list[str]:
        """Run-summary warnings about the detector's CUDA graphs (see `GraphCache.report`)."""
        return self._graphs.report("detector") if self.cuda_graphs else []

    def preprocess(self, image: np.ndarray, *, rgb: bool = True) -> tuple[torch.Tensor, float, float]:
        """(H, W, 3) uint8 -> ((1, 3, 640, 640) network input, w_scale, h_scale).

        Exact cv2 letterbox on the CPU; on other devices the frame is uploaded
        and resized there (within +-1 grey level of cv2)."""
        _check_image(image)
        if self.device.type == "cpu":
            padded, w_scale, h_scale = post.letterbox_cv2(image)
            padded = torch.from_numpy(padded)
        else:
            padded, w_scale, h_scale = post.letterbox_torch(self._upload(image))
        return post.normalize(padded, rgb=rgb).to(self.dtype), w_scale, h_scale

    @torch.inference_mode()
    def candidates(self, image: np.ndarray, *, rgb: bool = True) -> tuple[torch.Tensor, torch.Tensor]:
        """All candidates above 0.05 (before the top-100 cut), as float32 tensors on the device."""
        x, w_scale, h_scale = self.preprocess(image, rgb=rgb)
        logits, dists = self.model(x)
        return post.candidates_from_outputs(logits, dists, w_scale, h_scale)

    def raw(self, image: np.ndarray, *, rgb: bool = True) -> tuple[np.ndarray, np.ndarray]:
        """The detector's own output (mmdet's `inference_detector`): the top 100
        candidates, boxes (<=100, 4) and scores, before the demo's filtering."""
        return post.keep_candidates(self._top_candidates(image, rgb))

    def __call__(self, image: np.ndarray, *, rgb: bool = True) -> tuple[np.ndarray, np.ndarray]:
        """Person boxes of one (H, W, 3) uint8 frame, RGB like every frame of the pipeline (BGR from OpenCV with `rgb=False`)."""
        boxes, scores = self.raw(image, rgb=rgb)
        return post.select_people_np(boxes, scores, image.shape[:2])

    @torch.inference_mode()
    def _top_candidates(self, image: np.ndarray, rgb: bool) -> np.ndarray:
        """(100, 5) rows of `post.top_candidates` on the host. On CUDA everything up to
        them runs on the detector's stream, and waiting for them is the only host sync."""
        if not self.cuda:
            x, w_scale, h_scale = self.preprocess(image, rgb=rgb)
            return post.top_candidates(*self.model(x), w_scale, h_scale).numpy()
        self.stream.wait_stream(torch.cuda.current_stream(self.device))  # weights written on the default stream
        _check_image(image)
        with torch.cuda.stream(self.stream):
            work = functools.partial(self._rows, rgb)
            frame = self._upload(image)
            if self.cuda_graphs:
                rows = self._graphs.run((tuple(image.shape), rgb), "detector", work, frame)
            else:
                rows = work(frame)
            host = self._host_buffer("rows", rows.shape, rows.dtype)
            host.copy_(rows, non_blocking=True)
            done = torch.cuda.Event(blocking=True)  # the host sleeps on it instead of spinning
            done.record(self.stream)
        done.synchronize()
        return host.numpy().copy()

    def _rows(self, rgb: bool, frame: torch.Tensor) -> torch.Tensor:
        """(100, 5) candidate rows of a frame (H, W, 3) uint8 already on the device: the
        letterbox, the network at 640x640 and the decoding, all on the device with shapes
        fixed by the frame size (what a CUDA graph captures)."""
        padded, w_scale, h_scale = post.letterbox_torch(frame)
        x = post.normalize(padded, rgb=rgb).to(self.dtype)
        return post.top_candidates(*self.model(x), w_scale, h_scale)

    def _upload(self, image: np.ndarray) -> torch.Tensor:
        """The frame on the device through a pinned buffer (a pageable copy would block).
        The buffer is reused: the previous call's wait already covered its copy."""
        if not self.cuda:
            return torch.from_numpy(np.ascontiguousarray(image)).to(self.device)
        host = self._host_buffer("frame", image.shape, torch.uint8)
        host.numpy()[...] = image
        return host.to(self.device, non_blocking=True)

    def _host_buffer(self, name: str, shape, dtype: torch.dtype) -> torch.Tensor:
        buf = self._pinned.get(name)
        if buf is None or tuple(buf.shape) != tuple(shape) or buf.dtype != dtype:
            buf = self._pinned[name] = torch.empty(tuple(shape), dtype=dtype, pin_memory=True)
        return buf


def _check_image(image: np.ndarray) -> None:
    if image.ndim != 3 or image.shape[2] != 3 or image.dtype != np.uint8:
        raise ValueError(f"expected an (H, W, 3) uint8 image, got {image.shape} {image.dtype}")


def filter_state_dict(state_dict: dict[str, torch.Tensor], model: RTMDet) -> dict[str, torch.Tensor]:
    """Pure key clean-up before the strict load: drop EMA copies and preprocessor
    buffers (docs/numerics.md, "Checkpoint"), and take `num_batches_tracked` from the model when the
    file lacks it (unused at inference)."""
    out = {k: v for k, v in state_dict.items() if not k.startswith(("ema_", "data_preprocessor."))}
    for key, value in model.state_dict().items():
        if key.endswith("num_batches_tracked") and key not in out:
            out[key] = value
    return out


def _shared_conv_report(state_dict: dict[str, torch.Tensor]) -> str:
    """'' when the per-level copies of the shared head convs equal level 0's, else which differ."""
    differ = []
    for key, value in state_dict.items():
        parts = key.split(".")
        if key.startswith(("bbox_head.cls_convs.", "bbox_head.reg_convs.")) and parts[2] != "0" and parts[-2] == "conv":
            ref = state_dict.get(".".join(parts[:2] + ["0"] + parts[3:]))
            if ref is not None and (ref.shape != value.shape or not torch.equal(ref, value)):
                differ.append(key)
    return ", ".join(differ)


def _width_hint(state_dict: dict[str, torch.Tensor], widen: float) -> str:
    stem = state_dict.get("backbone.stem.0.conv.weight")
    if stem is None or stem.ndim != 4:
        return "It does not look like an RTMDet checkpoint (no backbone.stem.0.conv.weight)."
    file_widen = stem.shape[0] * 2 / 64
    if stem.shape[0] != int(64 * widen // 2):
        return f"Its stem has {stem.shape[0]} channels, i.e. widen factor {file_widen:g}, not {widen:g}."
    return ""


def detector_path(checkpoint: Optional[str | os.PathLike] = None, *, download: bool = True) -> Path:
    """The detector file: `checkpoint` if given, else `$SAPIENS_CHECKPOINT_ROOT/detector/rtmdet_m.pth`
    (or the release's own file name in that folder), else the Hugging Face cache, else a
    download (when `download`); a `UserError` naming `sapiens-rt download --tasks detector` otherwise."""
    return resolve_file(
        explicit=checkpoint,
        root_relative=[DETECTOR_ROOT_RELATIVE, f"detector/{DETECTOR_FILENAME}"],
        repo_id=DETECTOR_REPO,
        filenames=[DETECTOR_FILENAME],
        what="the RTMDet person detector",
        fetch_command=DETECTOR_FETCH_COMMAND,
        download=download,
    )


def load_detector(
    checkpoint: Optional[str | os.PathLike] = None,
    *,
    widen: Optional[float] = 0.75,
    device: torch.device | str = "cpu",
    dtype: torch.dtype = torch.float32,
    cuda_graphs: bool = False,
) -> Detector:
    """Load the RTMDet person detector and return a callable `Detector`.

    checkpoint: an mmdet `.pth` (read with weights_only=True) or a `.safetensors`
    state dict; None looks under `$SAPIENS_CHECKPOINT_ROOT/detector/rtmdet_m.pth`,
    then the Hugging Face cache, then downloads from `facebook/sapiens-pose-bbox-detector`.
    widen: width factor (0.75 = RTMDet-m, the released model); None reads it from the
    file's stem width (e.g. the narrow test fixtures).
    cuda_graphs: on CUDA, replay the detector as a CUDA graph (see `Detector`).
    """
    path = detector_path(checkpoint)
    raw = read_state_dict(path)
    if widen is None:
        stem = raw.get("backbone.stem.0.conv.weight", raw.get("module.backbone.stem.0.conv.weight"))
        widen = stem.shape[0] * 2 / 64 if stem is not None and stem.ndim == 4 else 0.75
    model = RTMDet(widen=widen)
    state_dict = filter_state_dict(raw, model)
    what = f"the RTMDet person detector (widen {widen:g})"
    load_strict(model, state_dict, source=str(path), what=what, hint=_width_hint(state_dict, widen),
                fix=f"Pass the released RTMDet-m person detector ({DETECTOR_FILENAME}) with --detector, or leave "
                    f"--detector out to use it from the hub.")
    differ = _shared_conv_report(state_dict)
    if differ:
        raise UserError(
            f"Checkpoint {path} has per-level head convs that should be shared but differ from level 0 ({differ}); "
            f"pass an unmodified RTMDet checkpoint."
        )
    folded = fold_batchnorm(model.eval())  # in fp32, before any cast to the run's dtype
    log.info("loaded %s from %s (%d batch norms folded into their convs)", what, path, folded)
    return Detector(model, device=device, dtype=dtype, cuda_graphs=cuda_graphs)
