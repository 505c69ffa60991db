"""RTMDet person detector against the mmdet golden fixtures (tests/reference/rtmdet)."""

import json

import numpy as np
import pytest
import torch
from safetensors.torch import load_file, save_file

from realtime.detect import BoxFinder
from realtime.errors import UserError
from realtime.models import rtmdet_post as post
from realtime.models.rtmdet import RTMDet, load_detector

CHECKPOINTS = ("tiny_w025_checkpoint.pth", "tiny_w025_state_dict.safetensors")
CASES = ("a", "b", "c")


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    """Helpers and CI share two cores; torch's OpenMP threads spin-wait under contention
    and make these small forwards several times slower, so run them on one thread."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module", params=CHECKPOINTS)
def detector(request, rtmdet_fixtures_dir):
    return load_detector(rtmdet_fixtures_dir / request.param, widen=0.25)


@pytest.fixture(scope="module")
def cases(rtmdet_fixtures_dir):
    return {c: load_file(str(rtmdet_fixtures_dir / f"tiny_w025_case_{c}.safetensors")) for c in CASES}


def _close(actual, expected, rel):
    """docs/numerics.md, "Fixtures and tolerances", network tensors: max|diff| <= rel * max(1, max|ref|)."""
    expected = torch.as_tensor(expected)
    bound = rel * max(1.0, expected.abs().max().item())
    assert torch.as_tensor(actual).shape == expected.shape
    assert (torch.as_tensor(actual) - expected).abs().max().item() <= bound


def test_real_m_architecture_matches_the_mmdet_manifest(rtmdet_fixtures_dir):
    manifest = json.loads((rtmdet_fixtures_dir / "rtmdet_m_person_state_dict_manifest.json").read_text())
    ours = [(k, list(v.shape)) for k, v in RTMDet(widen=0.75).state_dict().items()]
    assert ours == [(k, shape) for k, shape, _ in manifest["keys"]]
    assert len(ours) == manifest["num_keys"] == 692
    model = RTMDet(widen=0.75)
    for group in manifest["shared_storage_groups"]:  # the head convs really are one parameter per branch
        params = {id(model.get_parameter(k)) for k in group}
        assert len(params) == 1


def test_fixture_manifest_matches_tiny_model(rtmdet_fixtures_dir):
    manifest = json.loads((rtmdet_fixtures_dir / "tiny_w025_state_dict_manifest.json").read_text())
    ours = [(k, list(v.shape)) for k, v in RTMDet(widen=0.25).state_dict().items()]
    assert ours == [(k, shape) for k, shape, _ in manifest["keys"]]


@pytest.mark.parametrize("case", CASES)
def test_letterbox_exact_with_cv2_and_within_one_level_with_torch(cases, case):
    data = cases[case]
    image = data["image_bgr_uint8"].numpy()
    padded, _, _ = post.letterbox_cv2(image)
    np.testing.assert_array_equal(padded, data["padded_bgr_uint8"].numpy())
    on_device, _, _ = post.letterbox_torch(torch.from_numpy(image))
    diff = (on_device - data["padded_bgr_uint8"].float()).abs().max().item()
    assert diff <= 1.0


def test_backbone_and_neck_outputs(detector, cases):
    data = cases["a"]
    x, _, _ = detector.preprocess(data["image_bgr_uint8"].numpy(), rgb=False)
    with torch.no_grad():
        feats = detector.model.backbone(x)
        necks = detector.model.neck(feats)
    for i in range(3):
        _close(feats[i], data[f"backbone_out{i}"], 1e-4)
        _close(necks[i], data[f"neck_out{i}"], 1e-4)


@pytest.mark.parametrize("case", CASES)
def test_raw_head_outputs(detector, cases, case):
    data = cases[case]
    x, _, _ = detector.preprocess(data["image_bgr_uint8"].numpy(), rgb=False)
    with torch.no_grad():
        logits, dists = detector.model(x)
    for i in range(3):
        _close(logits[i], data[f"cls_logits_l{i}"], 1e-4)
        ref = data[f"bbox_dist_l{i}"]
        assert dists[i].shape == ref.shape
        assert ((dists[i] - ref).abs() / ref.abs()).max().item() <= 1e-4


@pytest.mark.parametrize("case", CASES)
def test_post_processing_from_fixture_head_outputs(cases, case, rtmdet_fixtures_dir):
    data = cases[case]
    meta = json.loads((rtmdet_fixtures_dir / "cases.json").read_text())["cases"][f"case_{case}"]
    w_scale, h_scale = meta["scale_factor_wh"]
    image = data["image_bgr_uint8"].numpy()
    assert post.letterbox_size(*image.shape[:2])[2:] == (w_scale, h_scale)
    boxes, scores = post.candidates_from_outputs(
        [data[f"cls_logits_l{i}"] for i in range(3)], [data[f"bbox_dist_l{i}"] for i in range(3)], w_scale, h_scale
    )
    ref_boxes, ref_scores = data["candidates_bboxes"], data["candidates_scores"]
    assert boxes.shape == ref_boxes.shape
    assert (scores - ref_scores).abs().max().item() <= 1e-6
    # Exactly tied scores may come in either order: compare each tie group as a set.
    same = (boxes - ref_boxes).abs().max(dim=1).values <= 1e-4
    for i in torch.nonzero(~same).reshape(-1).tolist():
        tied = torch.nonzero(ref_scores == ref_scores[i]).reshape(-1)
        assert len(tied) > 1 and ((ref_boxes[tied] - boxes[i]).abs().max(dim=1).values <= 1e-4).any()
    top_boxes, top_scores = boxes[:100], scores[:100]
    assert (top_boxes - data["det_bboxes"]).abs().max().item() <= 1e-4
    assert (top_scores - data["det_scores"]).abs().max().item() <= 1e-6
    people, _ = post.select_people(data["det_bboxes"], data["det_scores"], image.shape[:2])
    assert torch.equal(people, data["demo_person_bboxes"])
    nobody, nobody_scores = post.select_people(data["det_bboxes"], data["det_scores"], image.shape[:2], bbox_thr=1.0)
    assert nobody.shape == (0, 4) and nobody_scores.shape == (0,)  # no sentinel box: nobody is nobody
    # the demo's fallback (the whole frame) is the box finder's, with the same box
    finder = BoxFinder("detector", lambda image, rgb=False: (nobody.numpy(), nobody_scores.numpy()))
    boxes, _, source = finder(np.zeros(image.shape, np.uint8), 0)
    assert source == "frame" and boxes.tolist() == meta["demo_fallback_at_bbox_thr_1_0"]


@pytest.mark.parametrize("case", CASES)
def test_end_to_end_detections_and_demo_boxes(detector, cases, case):
    data = cases[case]
    image = data["image_bgr_uint8"].numpy()
    boxes, scores = detector.raw(image, rgb=False)  # the fixture's image is BGR, as OpenCV reads it
    assert boxes.dtype == np.float32 and boxes.shape == (100, 4)
    np.testing.assert_allclose(boxes, data["det_bboxes"].numpy(), atol=1e-2, rtol=0)
    np.testing.assert_allclose(scores, data["det_scores"].numpy(), atol=1e-4, rtol=0)
    people, people_scores = detector(image, rgb=False)
    np.testing.assert_allclose(people, data["demo_person_bboxes"].numpy(), atol=1e-2, rtol=0)
    assert (people_scores > 0.3).all()
    # An RGB frame (the default, like every frame of the pipeline) gives the same boxes (channels swapped after the resize).
    rgb_people, _ = detector(np.ascontiguousarray(image[..., ::-1]))
    np.testing.assert_allclose(rgb_people, people, atol=1e-3, rtol=0)


def test_half_precision_head_decodes_in_float32(rtmdet_fixtures_dir):
    det = load_detector(rtmdet_fixtures_dir / CHECKPOINTS[1], widen=0.25, dtype=torch.bfloat16)
    assert det.model.backbone.stem[0].conv.weight.dtype == torch.bfloat16
    feats = tuple(torch.randn(1, 64, s, s, dtype=torch.bfloat16) * 3 for s in (8, 4, 2))
    with torch.no_grad():
        logits, dists = det.model.bbox_head(feats)
    assert all(t.dtype == torch.float32 for t in logits + dists)
    # exp(reg) * stride is taken in float32: no overflow where float16 would give inf.
    with torch.no_grad():
        reg = det.model.bbox_head.rtm_reg[2]
        reg.bias.fill_(12.0)
        _, dists = det.model.bbox_head(feats)
    assert torch.isfinite(dists[2]).all() and dists[2].max() > 65504


def test_wrong_width_and_wrong_files_give_readable_reports(tmp_path, rtmdet_fixtures_dir):
    fixture = rtmdet_fixtures_dir / CHECKPOINTS[1]
    with pytest.raises(UserError, match=r"widen factor 0\.25, not 0\.75") as err:
        load_detector(fixture)
    assert "with other shapes" in str(err.value)

    state = load_file(str(fixture))
    del state["neck.out_convs.2.conv.weight"]
    state["extra.weight"] = torch.zeros(1)
    partial = tmp_path / "partial.safetensors"
    save_file(state, str(partial))
    with pytest.raises(UserError, match=r"1 keys missing \(neck.out_convs.2.conv.weight\).*1 keys unexpected \(extra.weight\)"):
        load_detector(partial, widen=0.25)

    truncated = tmp_path / "rtmdet_m.pth"
    truncated.write_bytes((rtmdet_fixtures_dir / CHECKPOINTS[0]).read_bytes()[:100_000])
    with pytest.raises(UserError, match="truncated"):
        load_detector(truncated, widen=0.25)

    state = load_file(str(fixture))
    state["bbox_head.reg_convs.2.1.conv.weight"] = state["bbox_head.reg_convs.2.1.conv.weight"] + 1
    forked = tmp_path / "forked.safetensors"
    save_file(state, str(forked))
    with pytest.raises(UserError, match=r"reg_convs\.2\.1\.conv\.weight"):
        load_detector(forked, widen=0.25)


def test_missing_num_batches_tracked_and_ema_keys_are_tolerated(tmp_path, rtmdet_fixtures_dir):
    state = load_file(str(rtmdet_fixtures_dir / CHECKPOINTS[1]))
    state = {k: v for k, v in state.items() if not k.endswith("num_batches_tracked")}
    state["ema_backbone_stem_0_conv_weight"] = torch.zeros(1)
    path = tmp_path / "det.pth"
    torch.save({"meta": {"epoch": 1}, "state_dict": {f"module.{k}": v for k, v in state.items()}}, path)
    det = load_detector(path, widen=0.25)
    assert det.model.backbone.stem[0].conv.weight.shape == (8, 3, 3, 3)


def test_checkpoint_resolution_from_root_and_offline_error(tmp_path, monkeypatch, rtmdet_fixtures_dir):
    monkeypatch.setenv("SAPIENS_CHECKPOINT_ROOT", str(tmp_path))
    with pytest.raises(UserError, match="sapiens-rt download --tasks detector"):
        load_detector(widen=0.25)
    (tmp_path / "detector").mkdir()
    (tmp_path / "detector" / "rtmdet_m.pth").write_bytes((rtmdet_fixtures_dir / CHECKPOINTS[0]).read_bytes())
    assert load_detector(widen=0.25).model.bbox_head.rtm_cls[0].weight.shape == (1, 64, 1, 1)


def test_load_detector_is_public_api_of_realtime_models(rtmdet_fixtures_dir):
    import numpy as np

    from realtime.models import load_detector

    detector = load_detector(rtmdet_fixtures_dir / "tiny_w025_checkpoint.pth", widen=None)  # width read from the file
    boxes, scores = detector(np.full((240, 320, 3), 114, np.uint8))
    assert boxes.dtype == np.float32 and boxes.shape[1] == 4 and len(scores) == len(boxes) >= 1


def test_batchnorm_folded_at_load_one_op_less_per_conv_module(rtmdet_fixtures_dir, cases):
    """load_detector folds every BatchNorm into its conv (the fixture tests above check the
    folded outputs); the forward then runs 112 fewer ops, and matches the unfolded network."""
    from bench.detector import aten_ops
    from realtime.models.checkpoint import read_state_dict
    from realtime.models.rtmdet import filter_state_dict, fold_batchnorm

    detector = load_detector(rtmdet_fixtures_dir / CHECKPOINTS[1], widen=0.25)
    folded = detector.model
    plain = RTMDet(widen=0.25)
    plain.load_state_dict(filter_state_dict(read_state_dict(rtmdet_fixtures_dir / CHECKPOINTS[1]), plain))
    with pytest.raises(ValueError, match="eval mode"):
        fold_batchnorm(plain)  # a training-mode model: its statistics are not final
    plain.eval()
    x, _, _ = detector.preprocess(cases["a"]["image_bgr_uint8"].numpy(), rgb=False)
    before, after = aten_ops(plain, x), aten_ops(folded, x)
    assert before["batch_norm"] == 112 and "batch_norm" not in after
    assert sum(after.values()) == sum(before.values()) - 112 == 286
    assert after["conv2d"] == before["conv2d"] == 122
    assert not any(isinstance(m, torch.nn.BatchNorm2d) for m in folded.modules())
    head = folded.bbox_head  # the shared head convs: now one copy per level, each with its level's BN folded in
    assert plain.bbox_head.cls_convs[1][0].conv is plain.bbox_head.cls_convs[0][0].conv
    assert head.cls_convs[1][0].conv is not head.cls_convs[0][0].conv
    with torch.no_grad():
        want, got = plain(x), folded(x)
    for w, g in zip(want[0] + want[1], got[0] + got[1]):
        _close(g, w, 1e-4)
    assert fold_batchnorm(folded) == 0  # nothing left to fold
