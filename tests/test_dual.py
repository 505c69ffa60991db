"""The dual backbone (realtime/models/dual.py): pose's and seg's backbones run as one (stacked weights as
batched GEMMs, one attention call of batch 2, each model's own norms and heads) equal the two models run
apart, within the golden fixtures' tolerance (on the CPU in fp32: bit for bit); in the Predictor
(dual=True) a frame with pose and seg still waits for the GPU once, on the stand-in, and every key a run
meets is captured in the warm-up."""

import copy

import numpy as np
import pytest
import torch
from safetensors.torch import load_file

from realtime.errors import UserError
from realtime.infer import Predictor
from realtime.models import load_model
from realtime.models.dual import DualBackbone, DualTaskModel
from tests.gpu_standin import StandinGPU

IMAGE = np.random.default_rng(0).integers(0, 256, (96, 128, 3), dtype=np.uint8)
BOXES = np.array([[10, 10, 60, 90], [40, 5, 120, 95], [0, 0, 127, 95]], np.float32)


@pytest.fixture(scope="module")
def fixture_models(fixtures_dir):
    return {task: load_model(task, fixtures_dir / f"{task}_weights.safetensors") for task in ("pose", "seg")}


def test_dual_outputs_equal_the_two_models_and_the_official_fixtures(fixtures_dir, fixture_models):
    pose_io = load_file(str(fixtures_dir / "pose_io.safetensors"))
    seg_io = load_file(str(fixtures_dir / "seg_io.safetensors"))
    dual = DualTaskModel(fixture_models["pose"], fixture_models["seg"])
    with torch.inference_mode():
        heatmaps, logits = dual(pose_io["input"], seg_io["input"])
        apart = fixture_models["pose"](pose_io["input"]), fixture_models["seg"](seg_io["input"])
    for got, single, official in ((heatmaps, apart[0], pose_io["heatmaps"]), (logits, apart[1], seg_io["seg_logits"])):
        assert got.shape == official.shape
        d = (got - official).abs()
        assert d.max() <= 1e-2 and d.mean() <= 5e-4  # the fixtures' head tolerance (tests/reference/fixtures/README.md)
        torch.testing.assert_close(got, single, rtol=0, atol=1e-5)


def test_each_model_keeps_its_own_weights(fixture_models):
    """Swapping which backbone is first swaps the outputs: nothing of one model leaks into the other."""
    x1, x2 = torch.randn(1, 3, 64, 48, generator=torch.Generator().manual_seed(1)), torch.randn(1, 3, 64, 48)
    pose, seg = fixture_models["pose"].backbone, fixture_models["seg"].backbone
    with torch.inference_mode():
        a1, a2 = DualBackbone(pose, seg)(x1, x2)
        b2, b1 = DualBackbone(seg, pose)(x2, x1)
        torch.testing.assert_close(a1, b1, rtol=0, atol=1e-5)
        torch.testing.assert_close(a2, b2, rtol=0, atol=1e-5)
        assert (a1 - pose(x1)).abs().max() < 1e-5 and (a1 - seg(x1)).abs().max() > 0.1


def test_backbones_that_do_not_stack_are_refused(fixture_models):
    from realtime.models import fp8
    from realtime.models.archs import ARCHS
    from realtime.models.sapiens2 import Sapiens2

    big = Sapiens2(ARCHS["fixture_e64_h4_l18"]).eval()
    with pytest.raises(ValueError, match="differ in size"):
        DualBackbone(fixture_models["pose"].backbone, big)
    swapped = copy.deepcopy(fixture_models["seg"])
    fp8.to_float8(swapped, "attention")
    with pytest.raises(ValueError, match="FP8"):
        DualBackbone(fixture_models["pose"].backbone, swapped.backbone)
    with pytest.raises(ValueError, match="one shape"):
        DualBackbone(fixture_models["pose"].backbone, fixture_models["seg"].backbone)(torch.zeros(1, 3, 64, 48),
                                                                                        torch.zeros(1, 3, 32, 48))


def test_the_predictor_refuses_what_cannot_run_as_one(fixture_models):
    with pytest.raises(UserError, match="needs both tasks"):
        Predictor({"pose": fixture_models["pose"]}, input_hw=(128, 96), dual=True)
    with pytest.raises(UserError, match="flip test"):
        Predictor(fixture_models, input_hw=(128, 96), dual=True, flip_test=True)
    with pytest.raises(UserError, match="seg at"):
        Predictor(fixture_models, sizes={"pose": (128, 96), "seg": (64, 48)}, dual=True)


def test_the_predictor_runs_pose_and_seg_as_one_and_waits_once(fixture_models):
    """One person: pose and seg through the dual backbone on pose's stream, one host wait, the outputs of the
    models run apart; three people: the models apart again, on their own streams."""
    wants = {n: Predictor(copy.deepcopy(fixture_models), input_hw=(128, 96), channels_last=True).predict(IMAGE, BOXES[:n])
             for n in (1, 3)}
    with StandinGPU() as gpu:
        models = {task: copy.deepcopy(model).to("cuda") for task, model in fixture_models.items()}
        predictor = Predictor(models, device="cuda", input_hw=(128, 96), dual=True)
        pose_stream, seg_stream = predictor._streams["pose"].name, predictor._streams["seg"].name
        for n in (1, 3):
            gpu.rec.clear()
            got = predictor.predict(IMAGE, BOXES[:n])
            assert len(gpu.rec.syncs()) == 1, [s.what for s in gpu.rec.syncs()]
            assert not gpu.rec.races
            batched = [e for e in gpu.rec.log if e.kind == "op" and "baddbmm" in e.what]
            if n == 1:
                assert batched and all(e.stream == pose_stream for e in batched)
                assert not gpu.rec.ops(seg_stream)  # seg was made with pose
            else:
                assert not batched and gpu.rec.ops(seg_stream)
            np.testing.assert_allclose(got.keypoints, wants[n].keypoints, atol=1e-3)
            np.testing.assert_allclose(got.keypoint_scores, wants[n].keypoint_scores, atol=1e-5)
            np.testing.assert_array_equal(got.seg, wants[n].seg)


def test_every_key_a_dual_run_meets_is_captured_in_the_warm_up(fixture_models):
    """With CUDA graphs: the dual key, pose alone (frames that reuse seg) and seg alone (nobody in the frame)
    are all captured in the warm-up; none later."""
    with StandinGPU():
        models = {task: copy.deepcopy(model).to("cuda") for task, model in fixture_models.items()}
        predictor = Predictor(models, device="cuda", input_hw=(128, 96), cuda_graphs=True, max_batch=3, dual=True)
        predictor.warm_up(IMAGE.shape[:2])
        keys = predictor._graphs.captured()
        assert ("dual", 1, (3, 96, 128), (96, 128)) in keys
        assert {("pose", b, (3, 96, 128)) for b in (1, 2, 3)} <= set(keys) and ("seg", (3, 96, 128), (96, 128)) in keys
        predictor.predict(IMAGE, BOXES[:1])
        predictor.predict(IMAGE, BOXES[:1], tasks={"pose"})
        predictor.predict(IMAGE, BOXES[:0])
        predictor.predict(IMAGE, BOXES[:3])
        assert predictor._graphs.late == [] and predictor.graph_report() == []
