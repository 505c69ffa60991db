"""Sapiens2 task heads (docs/numerics.md, "Task heads"). `nn.Sequential` positions equal the official
key indices (norms and activations hold no parameters, except RMSNorm2d in the
albedo head), so `decode_head.*` keys load unchanged.

InstanceNorm2d is PyTorch's default: eps 1e-5, no affine parameters, always
per-sample statistics. Deconvolutions have no bias; every Conv2d/Linear has one.
SiLU runs in place on the norm's fresh output (the same bits, one temporary fewer).

`to_channels_last(model)` switches the heads inside a model to channels_last (NHWC)
convolutions, which cuDNN runs on tensor cores without transposing; `infer.Predictor`
does it on CUDA. Outputs keep the default (contiguous) layout either way.
"""

from __future__ import annotations

import functools
import math
from typing import Sequence

import torch
import torch.nn.functional as F
from torch import nn

from realtime.models.cpu_fp32 import cpu_fp32_inference

_DECONV_PADDING = {4: (1, 0), 3: (1, 1), 2: (0, 0)}  # kernel -> (padding, output_padding): exactly 2x


def _is_channels_last(x: torch.Tensor) -> bool:
    return x.dim() == 4 and not x.is_contiguous() and x.is_contiguous(memory_format=torch.channels_last)


class InstanceNorm2d(nn.InstanceNorm2d):
    """`nn.InstanceNorm2d` (no affine, no running statistics) that keeps a channels_last input
    channels_last: PyTorch's makes it contiguous, which in a channels_last head would cost a
    transpose before and after every norm. The same statistics (biased variance, `eps`), in two
    passes over the input: for one image batch norm's (NHWC kernels on CPU and CUDA: statistics,
    then normalising, in float); for a batch `var_mean` (one reduction, either layout), then
    x * scale + shift in one `addcmul` (scale = 1/std and shift = -mean/std, a few float32
    values per image, so half precision loses nothing to the cancellation), written in the
    input's dtype, instead of a subtraction and a multiplication that each read and write the
    whole map. A contiguous input takes PyTorch's own kernel."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not _is_channels_last(x):
            return super().forward(x)
        if x.shape[0] == 1:  # one image: batch norm's per-channel statistics are its own, in one NHWC kernel
            return F.batch_norm(x, None, None, training=True, eps=self.eps)
        var, mean = torch.var_mean(x, dim=(2, 3), keepdim=True, correction=0)  # pass 1: (B, C, 1, 1) each
        if torch.compiler.is_compiling():  # inductor fuses these into the second pass itself (and takes no NHWC out=)
            return (x - mean) * torch.rsqrt(var + self.eps)
        scale = torch.rsqrt(var.float() + self.eps)
        shift = mean.float().mul(scale).neg_()
        return torch.addcmul(shift, x, scale, out=torch.empty_like(x))  # pass 2: (x - mean) / std, in x's dtype


class PixelShuffle(nn.PixelShuffle):
    """`nn.PixelShuffle` that hands a channels_last input on channels_last (PyTorch's CUDA kernel
    returns NCHW; the next convolution would transpose it back anyway)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = super().forward(x)
        return out.contiguous(memory_format=torch.channels_last) if _is_channels_last(x) else out


class _Layout(nn.Module):
    """Base of the heads: `channels_last` (set by `to_channels_last`) makes `forward` take its
    input in that layout; outputs go back to the default layout."""

    channels_last = False

    def _in(self, x: torch.Tensor) -> torch.Tensor:
        return x.contiguous(memory_format=torch.channels_last) if self.channels_last else x


def to_channels_last(model: nn.Module) -> int:
    """Switch every Sapiens2 head inside `model` to channels_last convolutions, in place: the
    4-d weights are stored NHWC and the head converts its input once; returns how many heads.
    Worth it on CUDA (cuDNN's tensor-core convolutions and deconvolutions work in NHWC and
    transpose NCHW operands themselves); see docs/gpu-performance.md for the CPU measurement."""
    heads = [m for m in model.modules() if isinstance(m, _Layout)]
    for head in heads:
        head.to(memory_format=torch.channels_last)
        head.channels_last = True
    return len(heads)


class ConvTranspose2d(nn.ConvTranspose2d):
    """`nn.ConvTranspose2d` that keeps its weight in oneDNN's packed layout between fp32 CPU
    inference calls.

    PyTorch's CPU deconvolution (oneDNN) reorders the weight into that layout on every call, a
    large part of the pose head's time (bench/RESULTS.md, "Packed deconvolution weights"). The
    packed weight runs the same oneDNN primitive, so the output is bit-identical
    (tests/test_heads_packed.py); it costs one more copy of the weight. It is packed for the
    input's channel and spatial size (oneDNN chooses the layout for it) and packed again when
    those or the weight change. Autograd, other devices and dtypes, tracing, export,
    `torch.compile` and channels_last inputs run the plain op."""

    _packed: tuple | None = None  # (key, packed weight): not a buffer, never saved

    def forward(self, x: torch.Tensor, output_size: Sequence[int] | None = None) -> torch.Tensor:
        if output_size is None and self._packable(x):
            return self._forward_packed(x)
        return super().forward(x, output_size)

    def _packable(self, x: torch.Tensor) -> bool:
        return (
            cpu_fp32_inference(x)
            and x.dim() == 4
            and x.is_contiguous()
            and self.weight.dtype == torch.float32
            and self.weight.is_contiguous()
            and self.padding_mode == "zeros"
            and torch.backends.mkldnn.enabled
            and _packed_deconvolution_ops()
        )

    def _forward_packed(self, x: torch.Tensor) -> torch.Tensor:
        geometry = (list(self.padding), list(self.output_padding), list(self.stride), list(self.dilation), self.groups)
        key = (self.weight.data_ptr(), _version(self.weight), tuple(x.shape[1:]))
        if self._packed is None or self._packed[0] != key:
            packed = torch.ops.mkldnn._reorder_convolution_transpose_weight(self.weight, *geometry, list(x.shape))
            self._packed = (key, packed)
        out = torch.ops.mkldnn._convolution_transpose_pointwise(x, self._packed[1], self.bias, *geometry, "none", [], "")
        return out.contiguous()  # oneDNN hands back NHWC; the plain op copies to NCHW too

    def _apply(self, fn, recurse=True):
        self._packed = None  # moved or cast: the packed copy is stale
        return super()._apply(fn, recurse)

    def __getstate__(self):
        state = dict(super().__getstate__())
        state.pop("_packed", None)  # a oneDNN tensor neither pickles nor deep-copies
        return state


@functools.cache
def _packed_deconvolution_ops() -> bool:
    """Whether this PyTorch build has oneDNN and its packed-weight deconvolution ops (private
    ops, present since PyTorch 2.0 for inductor's CPU freezing); without them the plain op runs."""
    return torch.backends.mkldnn.is_available() and all(
        hasattr(torch.ops.mkldnn, op) for op in ("_reorder_convolution_transpose_weight", "_convolution_transpose_pointwise")
    )


def _version(t: torch.Tensor) -> int:
    """The tensor's in-place write counter; -1 for an inference tensor, which has none (and
    cannot be written to outside inference mode either)."""
    try:
        return t._version
    except RuntimeError:
        return -1


def _deconv_stack(in_channels: int, out_channels: Sequence[int], kernel: int = 4) -> nn.Sequential:
    padding, output_padding = _DECONV_PADDING[kernel]
    layers: list[nn.Module] = []
    for c in out_channels:
        layers += [
            ConvTranspose2d(in_channels, c, kernel, stride=2, padding=padding, output_padding=output_padding, bias=False),
            InstanceNorm2d(c),
            nn.SiLU(inplace=True),
        ]
        in_channels = c
    return nn.Sequential(*layers)


def _conv_stack(in_channels: int, out_channels: Sequence[int], kernel: int, norm=InstanceNorm2d) -> nn.Sequential:
    layers: list[nn.Module] = []
    for c in out_channels:
        layers += [nn.Conv2d(in_channels, c, kernel, padding=(kernel - 1) // 2), norm(c), nn.SiLU(inplace=True)]
        in_channels = c
    return nn.Sequential(*layers)


class RMSNorm2d(nn.Module):
    """RMSNorm over the channel axis at every pixel (albedo head); key `<i>.norm.weight`."""

    def __init__(self, channels: int) -> None:
        super().__init__()
        self.norm = nn.RMSNorm(channels, eps=1e-6)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(x.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)


class PoseHeatmapHead(_Layout):
    """featmap (B, E, h, w) -> heatmaps (B, 308, 4h, 4w): 2 deconvs, 1x1 convs, conv_pose."""

    output_channels_arg = "out_channels"  # the keyword that sets the output layer's width

    def __init__(self, in_channels: int, *, deconv_out_channels: Sequence[int], conv_out_channels: Sequence[int],
                 out_channels: int = 308) -> None:
        super().__init__()
        self.deconv_layers = _deconv_stack(in_channels, deconv_out_channels)
        self.conv_layers = _conv_stack(deconv_out_channels[-1], conv_out_channels, 1)
        self.conv_pose = nn.Conv2d(conv_out_channels[-1], out_channels, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv_pose(self.conv_layers(self.deconv_layers(self._in(x)))).contiguous()


class SegHead(_Layout):
    """featmap (B, E, h, w) -> class logits (B, 29, 16h, 16w): 4 deconvs, 1x1 convs, conv_seg.

    With `out_hw` smaller than 16h x 16w (in pixels), the logits come out at `out_hw`: the last
    features are resized (bilinear, half-pixel centres) before the 1x1 classifier, which equals
    resizing the logits (both are linear, and bilinear weights sum to 1) without the full-size
    logits ever being written; a larger `out_hw` leaves the logits at 16h x 16w."""

    output_channels_arg = "num_classes"

    def __init__(self, in_channels: int, *, deconv_out_channels: Sequence[int], conv_out_channels: Sequence[int],
                 num_classes: int = 29) -> None:
        super().__init__()
        self.deconv_layers = _deconv_stack(in_channels, deconv_out_channels)
        self.conv_layers = _conv_stack(deconv_out_channels[-1], conv_out_channels, 1)
        self.conv_seg = nn.Conv2d(conv_out_channels[-1], num_classes, 1)

    def forward(self, x: torch.Tensor, out_hw: tuple[int, int] | None = None) -> torch.Tensor:
        features = self.conv_layers(self.deconv_layers(self._in(x)))
        if out_hw is not None and out_hw[0] * out_hw[1] < features.shape[-2] * features.shape[-1]:
            features = F.interpolate(features, size=tuple(out_hw), mode="bilinear", align_corners=False)
        return self.conv_seg(features).contiguous()


class _DenseHead(_Layout):
    """Shared trunk of the normal / pointmap / albedo heads (docs/numerics.md, "Task heads"): a 3x3 input conv,
    4 upsample blocks [conv3 -> 4c, PixelShuffle(2), norm, SiLU] (16x in all), then 3x3 convs."""

    def __init__(self, in_channels: int, upsample_channels: Sequence[int], conv_out_channels: Sequence[int],
                 norm=InstanceNorm2d) -> None:
        super().__init__()
        self.input_conv = _conv_stack(in_channels, (in_channels,), 3, norm)
        blocks, c_in = [], in_channels
        for c in upsample_channels:
            blocks.append(nn.Sequential(nn.Conv2d(c_in, 4 * c, 3, padding=1), PixelShuffle(2), norm(c), nn.SiLU(inplace=True)))
            c_in = c
        self.upsample_blocks = nn.ModuleList(blocks)
        self.conv_layers = _conv_stack(c_in, conv_out_channels, 3, norm)

    def trunk(self, x: torch.Tensor) -> torch.Tensor:
        x = self.input_conv(self._in(x))
        for block in self.upsample_blocks:
            x = block(x)
        return self.conv_layers(x)


class NormalHead(_DenseHead):
    """featmap (B, E, h, w) -> raw normals (B, 3, 16h, 16w), not unit length."""

    def __init__(self, in_channels: int, *, upsample_channels: Sequence[int], conv_out_channels: Sequence[int]) -> None:
        super().__init__(in_channels, upsample_channels, conv_out_channels)
        self.conv_normal = nn.Conv2d(conv_out_channels[-1], 3, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv_normal(self.trunk(x)).contiguous()


class AlbedoHead(_DenseHead):
    """The normal head with RMSNorm2d instead of InstanceNorm; raw RGB (B, 3, 16h, 16w)."""

    def __init__(self, in_channels: int, *, upsample_channels: Sequence[int], conv_out_channels: Sequence[int]) -> None:
        super().__init__(in_channels, upsample_channels, conv_out_channels, norm=RMSNorm2d)
        self.conv_albedo = nn.Conv2d(conv_out_channels[-1], 3, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv_albedo(self.trunk(x)).contiguous()


class PointmapHead(_DenseHead):
    """featmap (B, E, h, w) -> (canonical pointmap (B, 3, 16h, 16w), scale (B, 1)).

    The scale branch (strided 1x1 convs, flatten channel-major, MLP) reads the
    featmap itself; its first Linear fixes the grid to 64x48 for released sizes."""

    def __init__(
        self,
        in_channels: int,
        *,
        upsample_channels: Sequence[int],
        conv_out_channels: Sequence[int],
        scale_conv_out_channels: Sequence[int],
        scale_final_layer: Sequence[int],
    ) -> None:
        super().__init__(in_channels, upsample_channels, conv_out_channels)
        self.conv_pointmap = nn.Conv2d(conv_out_channels[-1], 3, 1)
        layers: list[nn.Module] = []
        c_in = in_channels
        for c in scale_conv_out_channels:
            layers += [nn.Conv2d(c_in, c, 1, stride=2), InstanceNorm2d(c), nn.SiLU(inplace=True)]
            c_in = c
        self.scale_conv_layers = nn.Sequential(*layers)
        mlp: list[nn.Module] = [nn.Flatten()]
        for i, (a, b) in enumerate(zip(scale_final_layer[:-1], scale_final_layer[1:])):
            mlp += [nn.Linear(a, b)] + ([nn.SiLU()] if i < len(scale_final_layer) - 2 else [])
        self.scale_final_layer = nn.Sequential(*mlp)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        x = self._in(x)
        grid = self.scale_grid(tuple(x.shape[-2:]))
        # Another input size than trained: the scale branch reads the featmap resized to its
        # trained grid (an approximation the official code does not offer: it fails there).
        xs = x if tuple(x.shape[-2:]) == grid else F.interpolate(x, size=grid, mode="bilinear", align_corners=False)
        scale = self.scale_final_layer(self.scale_conv_layers(xs))
        return self.conv_pointmap(self.trunk(x)).contiguous(), scale

    def scale_grid(self, featmap_hw: tuple[int, int]) -> tuple[int, int]:
        """The featmap grid the scale MLP was trained on: its first Linear takes C x h x w values
        after the stride-2 convs; of the grids that fit, the one closest in aspect to `featmap_hw`."""
        convs = [m for m in self.scale_conv_layers if isinstance(m, nn.Conv2d)]
        channels, values = convs[-1].out_channels, self.scale_final_layer[1].in_features
        h, w = featmap_hw
        for _ in convs:
            h, w = (h + 1) // 2, (w + 1) // 2  # a 1x1 conv with stride 2
        if h * w * channels == values:
            return featmap_hw  # fits as it is (the trained size)
        cells = values // channels
        pairs = [(a, cells // a) for a in range(1, cells + 1) if cells % a == 0]
        aspect = featmap_hw[0] / featmap_hw[1]
        gh, gw = min(pairs, key=lambda p: abs(math.log(p[0] / p[1] / aspect)))
        return gh * 2 ** len(convs), gw * 2 ** len(convs)

