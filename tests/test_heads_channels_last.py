"""channels_last heads (`heads.to_channels_last`): every task model's output equals the
contiguous path and the official golden fixtures within their tolerance (on the CPU, where
channels_last runs too), the heads' convolutions really run channels_last, and a CUDA
Predictor picks it (on the stand-in GPU) while a CPU one does not."""

import copy

import numpy as np
import pytest
import torch
from safetensors.torch import load_file
from torch import nn

from realtime.infer import Predictor
from realtime.models import heads, load_model
from realtime.models.checkpoint import load_strict
from realtime.models.registry import spec
from tests.gpu_standin import StandinGPU

TASKS = ("pose", "seg", "normal", "pointmap")
OUTPUT = {"pose": "heatmaps", "seg": "seg_logits", "normal": "normal_raw", "pointmap": "pointmap"}


def _check(out, ref, max_abs=1e-2, mean_abs=5e-4):  # tests/test_models_heads.py's fixture tolerance
    assert out.shape == ref.shape
    d = (out - ref).abs()
    assert d.max() <= max_abs and d.mean() <= mean_abs, (d.max().item(), d.mean().item())


def _conv_inputs_channels_last(model: nn.Module, x: torch.Tensor) -> list[bool]:
    """For each convolution and deconvolution of the head, whether its input was channels_last."""
    seen = []
    hooks = [m.register_forward_pre_hook(lambda m, a: seen.append(a[0].is_contiguous(memory_format=torch.channels_last)
                                                                   and not a[0].is_contiguous()))
             for m in model.decode_head.modules() if isinstance(m, (nn.Conv2d, nn.ConvTranspose2d))]
    with torch.no_grad():
        model(x)
    for h in hooks:
        h.remove()
    return seen


@pytest.mark.parametrize("task", TASKS)
def test_channels_last_heads_equal_the_contiguous_path_and_the_fixtures(fixtures_dir, task):
    model = load_model(task, fixtures_dir / f"{task}_weights.safetensors")
    io = load_file(str(fixtures_dir / f"{task}_io.safetensors"))
    with torch.no_grad():
        want = model(io["input"])
    fast = copy.deepcopy(model)
    assert heads.to_channels_last(fast) == 1
    with torch.no_grad():
        got = fast(io["input"])
    if task == "pointmap":
        (got, got_scale), (want, want_scale) = got, want
        torch.testing.assert_close(got_scale, want_scale, atol=1e-5, rtol=0)
        assert (got_scale - io["scale"]).abs().max() <= 1e-5
    assert got.is_contiguous()  # outputs keep the default layout
    torch.testing.assert_close(got, want, atol=1e-4, rtol=1e-4)
    _check(got, io[OUTPUT[task]])
    inputs = _conv_inputs_channels_last(fast, io["input"])
    assert inputs and all(inputs), inputs  # no layout flip back to NCHW inside the head
    conv = next(m for m in fast.decode_head.modules()
                if isinstance(m, (nn.Conv2d, nn.ConvTranspose2d)) and m.kernel_size != (1, 1))
    assert conv.weight.is_contiguous(memory_format=torch.channels_last) and not conv.weight.is_contiguous()


def test_channels_last_albedo_head_equals_the_fixture(fixtures_dir):
    head = heads.AlbedoHead(32, **spec("albedo").head_kwargs["fixture_e32_h4_l18"]).eval()
    weights = load_file(str(fixtures_dir / "albedo_head_weights.safetensors"))
    load_strict(head, {k.removeprefix("decode_head."): v for k, v in weights.items()},
                source="albedo_head_weights.safetensors", what="the fixture albedo head")
    io = load_file(str(fixtures_dir / "albedo_head_io.safetensors"))
    assert heads.to_channels_last(head) == 1 and head.channels_last
    with torch.no_grad():
        out = head(io["featmap"])
    _check(out, io["albedo_raw"], 1e-4, 1e-5)


@pytest.mark.parametrize("batch", [1, 3])  # one image: batch norm's kernel; a batch: var_mean
def test_the_instance_norm_keeps_the_layout_and_the_numbers(batch):
    x = torch.randn(batch, 8, 10, 7) * 3 + 2
    norm = heads.InstanceNorm2d(8)
    fast = norm(x.contiguous(memory_format=torch.channels_last))
    assert fast.is_contiguous(memory_format=torch.channels_last) and not fast.is_contiguous()
    torch.testing.assert_close(fast, nn.InstanceNorm2d(8)(x), atol=1e-5, rtol=1e-5)
    assert norm(x).is_contiguous()  # a contiguous input takes PyTorch's own kernel


@pytest.fixture(scope="module")
def task_models(fixtures_dir):
    return {task: load_model(task, fixtures_dir / f"{task}_weights.safetensors") for task in ("pose", "seg")}


def test_a_cuda_predictor_picks_channels_last_and_a_cpu_one_does_not(task_models):
    image = np.random.default_rng(0).integers(0, 256, (96, 128, 3), dtype=np.uint8)
    boxes = np.array([[10, 10, 60, 90], [40, 5, 120, 95]], np.float32)
    models = copy.deepcopy(task_models)
    cpu = Predictor(models, input_hw=(128, 96))
    assert not cpu.channels_last
    assert all(not m.decode_head.channels_last for m in models.values())
    want = Predictor(copy.deepcopy(task_models), input_hw=(128, 96), channels_last=True).predict(image, boxes)
    with StandinGPU() as gpu:
        models = {task: copy.deepcopy(model).to("cuda") for task, model in task_models.items()}
        predictor = Predictor(models, device="cuda", input_hw=(128, 96))
        assert predictor.channels_last
        for model in models.values():
            assert model.decode_head.channels_last
            weight = model.decode_head.deconv_layers[0].weight
            assert weight.is_contiguous(memory_format=torch.channels_last) and not weight.is_contiguous()
        gpu.rec.clear()
        got = predictor.predict(image, boxes)
        assert len(gpu.rec.syncs()) == 1 and not gpu.rec.races
    np.testing.assert_array_equal(got.keypoints, want.keypoints)
    np.testing.assert_array_equal(got.seg, want.seg)
