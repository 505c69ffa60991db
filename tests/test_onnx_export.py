"""`sapiens-rt export-model --to onnx`: ONNX Runtime (CPU) gives our outputs and the golden
fixtures' within the fixture tolerance, for any person batch; the bf16 RoPE rounding is in
the graph (and without it the outputs leave the tolerance); a missing extra is one sentence."""

import sys

import numpy as np
import pytest
import torch
from safetensors.torch import load_file

from realtime.cli import main
from realtime.errors import UserError
from realtime.models import load_model

onnx = pytest.importorskip("onnx", reason="the onnx extra is not installed: pip install '.[onnx]'")
ort = pytest.importorskip("onnxruntime", reason="the onnx extra is not installed: pip install '.[onnx]'")

from realtime.export_model import export_onnx  # noqa: E402  (after the skips)

MAX_ABS, MEAN_ABS = 1e-2, 5e-4  # the fixtures' head-output tolerance (fixtures/README.md)


def _session(path) -> "ort.InferenceSession":
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def _assert_close(got: np.ndarray, want: torch.Tensor) -> None:
    d = np.abs(got - want.numpy())
    assert d.max() <= MAX_ABS and d.mean() <= MEAN_ABS, (d.max(), d.mean())


@pytest.fixture(scope="module")
def pose(fixtures_dir, tmp_path_factory):
    """The pose fixture model exported through the CLI, with its io and our own model."""
    out = tmp_path_factory.mktemp("onnx") / "pose.onnx"
    weights = fixtures_dir / "pose_weights.safetensors"
    assert main(["export-model", "--to", "onnx", "--task", "pose", "--checkpoint", str(weights),
                 "--input-size", "64x48", "-o", str(out)]) == 0
    return out, load_file(str(fixtures_dir / "pose_io.safetensors")), load_model("pose", weights)


def test_pose_batch_1_and_3_equal_ours_and_the_fixture(pose):
    path, io, ours = pose
    session = _session(path)
    assert [i.name for i in session.get_inputs()] == ["image"] and [o.name for o in session.get_outputs()] == ["heatmaps"]
    x = io["input"]
    (one,) = session.run(None, {"image": x.numpy()})
    assert one.shape == (1, 308, 16, 12)
    _assert_close(one, io["heatmaps"])
    three = torch.cat([x, x.flip(-1), 0.5 * x])  # three different people in one batch
    (got,) = session.run(None, {"image": three.numpy()})
    with torch.no_grad():
        want = ours(three)
    assert got.shape == (3, 308, 16, 12)
    _assert_close(got, want)
    _assert_close(got[:1], io["heatmaps"])
    assert np.abs(got[1] - got[0]).max() > 0.1  # the batch rows really are different people


def test_graph_rounds_rope_to_bf16_and_needs_it(pose, tmp_path):
    path, io, _ = pose
    graph = onnx.load(str(path))
    casts = [n for n in graph.graph.node if n.op_type == "Cast" and n.attribute[0].i == onnx.TensorProto.BFLOAT16]
    assert len(casts) >= 18 * 2  # q and k rounded in every one of the 18 layers (and more: every bf16 step)
    # no bf16 arithmetic left for the runtime
    assert all(t.data_type != onnx.TensorProto.BFLOAT16 for t in graph.graph.initializer)
    for node in casts:  # the same graph with RoPE in fp32
        node.op_type = "Identity"
        del node.attribute[:]
    wide = tmp_path / "rope_fp32.onnx"
    onnx.save(graph, str(wide))
    (got,) = _session(wide).run(None, {"image": io["input"].numpy()})
    assert np.abs(got - io["heatmaps"].numpy()).max() > MAX_ABS  # the rounding is what keeps it within tolerance


def test_seg_equals_the_fixture_with_weights_in_a_data_file(fixtures_dir, tmp_path, monkeypatch):
    """The seg model written as a large (1b, 5b) model is: its weights in `seg.onnx.data` beside the graph."""
    from realtime import export_model

    monkeypatch.setattr(export_model, "EXTERNAL_DATA_BYTES", 0)
    io = load_file(str(fixtures_dir / "seg_io.safetensors"))
    path = export_onnx("seg", fixtures_dir / "seg_weights.safetensors", tmp_path / "seg.onnx", input_hw=(64, 48))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["seg.onnx", "seg.onnx.data"]  # no temporary files left
    assert (tmp_path / "seg.onnx.data").stat().st_size > 1e6 > path.stat().st_size
    (logits,) = _session(path).run(None, {"image": io["input"].repeat(2, 1, 1, 1).numpy()})
    assert logits.shape == (2, 29, 64, 48)
    _assert_close(logits[:1], io["seg_logits"])
    _assert_close(logits[1:], io["seg_logits"])


def test_missing_extra_is_one_sentence(monkeypatch, fixtures_dir, tmp_path, capsys):
    monkeypatch.setitem(sys.modules, "onnx", None)  # `import onnx` raises ImportError
    with pytest.raises(UserError,
                       match=r"needs the onnx package; install the ONNX extra with: pip install 'sapiens-realtime\[onnx\]'\.$"):
        export_onnx("pose", fixtures_dir / "pose_weights.safetensors", tmp_path / "pose.onnx")
    assert main(["export-model", "--to", "onnx", "--task", "pose", "--checkpoint", str(fixtures_dir / "pose_weights.safetensors"),
                 "-o", str(tmp_path / "p.onnx")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "pip install 'sapiens-realtime[onnx]'" in err and "Traceback" not in err
    assert not list(tmp_path.iterdir())  # nothing half-written


def test_bad_output_folder_and_wrong_task_checkpoint(fixtures_dir, tmp_path):
    with pytest.raises(UserError, match="does not exist; create it"):
        export_onnx("pose", fixtures_dir / "pose_weights.safetensors", tmp_path / "no" / "pose.onnx")
    with pytest.raises(UserError, match="is for pose, not seg"):
        export_onnx("seg", fixtures_dir / "pose_weights.safetensors", tmp_path / "seg.onnx")
