"""The same models and codec on a CUDA device (skipped without one): fp32 on the GPU meets the
fixture tolerances with TF32 off, half precision agrees at task level, the codec gives the
CPU's answers."""

import pytest
import torch
from safetensors.torch import load_file

from realtime.codec import decode_heatmaps
from realtime.transforms import box_to_center_scale, crop_persons
from realtime.models import load_model

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")]


@pytest.fixture(autouse=True)
def _no_tf32():
    old = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    yield
    torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = old


@pytest.mark.parametrize("task,key", [("pose", "heatmaps"), ("seg", "seg_logits"), ("normal", "normal_raw")])
def test_fp32_on_gpu_meets_fixture_tolerances(fixtures_dir, task, key):
    model = load_model(task, fixtures_dir / f"{task}_weights.safetensors", device="cuda")
    io = load_file(str(fixtures_dir / f"{task}_io.safetensors"))
    with torch.no_grad():
        out = model(io["input"].cuda()).cpu()
    d = (out - io[key]).abs()
    assert d.max() <= 1e-2 and d.mean() <= 5e-4


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_half_precision_on_gpu_agrees_with_fp32(fixtures_dir, dtype):
    io = load_file(str(fixtures_dir / "seg_io.safetensors"))
    ref = load_model("seg", fixtures_dir / "seg_weights.safetensors")
    half = load_model("seg", fixtures_dir / "seg_weights.safetensors", device="cuda", dtype=dtype)
    with torch.no_grad():
        a = ref(io["input"])
        b = half(io["input"].cuda()).float().cpu()
    assert (a.argmax(1) == b.argmax(1)).float().mean() > 0.9
    assert (a - b).norm() / a.norm() < 0.05


def test_codec_on_gpu_matches_cpu(fixtures_dir):
    pre = load_file(str(fixtures_dir / "preprocess.safetensors"))
    image = pre["image_bgr"].flip(-1).permute(2, 0, 1).contiguous()
    boxes = torch.stack((pre["pose_crop_bbox_xyxy"], pre["pose_crop2_bbox_xyxy"]))
    center, scale = box_to_center_scale(boxes, (128, 96))
    cpu = crop_persons(image, center, scale, (128, 96))
    gpu = crop_persons(image.cuda(), center.cuda(), scale.cuda(), (128, 96)).cpu()
    assert (cpu - gpu).abs().max() <= 1
    hm = load_file(str(fixtures_dir / "heatmap_decode.safetensors"))["heatmaps"][None]
    k_cpu, s_cpu = decode_heatmaps(hm)
    k_gpu, s_gpu = decode_heatmaps(hm.cuda())
    valid = s_cpu > 0
    assert torch.equal(s_cpu, s_gpu.cpu()) and (k_cpu - k_gpu.cpu()).abs()[valid].max() <= 1e-3
