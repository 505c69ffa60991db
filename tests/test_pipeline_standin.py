"""The threaded pipeline end to end on the stand-in GPU (tests/gpu_standin.py): the infer
stage launches each frame and the collect stage waits for it, each thread on its own
current stream; a file still gives every frame once, in order, with the CPU's keypoints,
and no stream race anywhere."""

import copy
import json

import numpy as np
import pytest

from media import gaussian_marker, write_video
from realtime.options import ModelOptions, OutputOptions, SmoothingOptions
from realtime.run import RunOptions, run
from tests.gpu_standin import StandinGPU

FRAMES = 7


def _boxes(image, index, previous=(), seg=None):
    """1, 2 or 3 people, changing from frame to frame (the batch size changes too)."""
    boxes = np.array([[0, 0, 127, 95], [10, 5, 70, 90], [50, 20, 120, 95]], np.float32)[: 1 + index % 3]
    return boxes, np.ones(len(boxes), np.float32), "detector"


def _run(tmp_path, name, models, device, cuda_graphs=False):
    frames = [gaussian_marker(96, 128, 30 + 8 * i, 50, 10) for i in range(FRAMES)]
    src = write_video(tmp_path / "clip.mp4", frames, fps=25)
    tracks = tmp_path / f"{name}.jsonl"
    options = RunOptions(source=str(src),
                         models=ModelOptions(device=device, dtype="fp32", input_hw=(128, 96), tasks=("pose", "seg"),
                                             cuda_graphs=cuda_graphs),
                         smoothing=SmoothingOptions(smooth="none"),
                         outputs=OutputOptions(tracks=str(tracks), output_dir=str(tmp_path), progress=False))
    summary = run(options, models=models, box_finder=_boxes)
    assert summary.result.exit_code == 0, summary.result.message
    lines = [json.loads(line) for line in tracks.read_text().splitlines() if line.strip()]
    return [row for row in lines if row["type"] == "frame"]


@pytest.fixture(scope="module")
def cpu_rows(tmp_path_factory, standin_task_models):
    return _run(tmp_path_factory.mktemp("cpu"), "cpu", standin_task_models, "cpu")


@pytest.mark.parametrize("cuda_graphs", [False, True])
def test_a_file_runs_through_launch_and_collect_stages_on_the_standin(tmp_path, standin_task_models, cpu_rows, cuda_graphs):
    want = cpu_rows
    with StandinGPU() as gpu:
        models = {task: copy.deepcopy(model).to("cuda") for task, model in standin_task_models.items()}
        got = _run(tmp_path, "gpu", models, "cuda", cuda_graphs)
        log = gpu.rec.log
    assert not gpu.rec.races
    assert [row["frame"] for row in got] == list(range(FRAMES))  # every frame once, in order
    for g, w in zip(got, want):
        assert len(g["people"]) == len(w["people"]) == 1 + g["frame"] % 3
        for pg, pw in zip(g["people"], w["people"]):
            # graphed runs pad the person batch (3 crops in a batch of 3, 2 of 2: no padding here)
            np.testing.assert_allclose(np.array(pg["kpts"]), np.array(pw["kpts"]), atol=1e-3)
    # the infer thread launched, the collect thread waited: one blocking wait per frame there
    launched_by = {e.thread for e in log if e.kind == "op" and e.stream not in ("default",)}
    waits = [e for e in log if e.kind == "sync" and e.thread == "stage-collect"]
    assert "stage-infer" in launched_by and "stage-collect" not in launched_by
    assert len(waits) == FRAMES and all("blocking" in e.what for e in waits)
    infer_syncs = [e.what for e in log if e.kind == "sync" and e.thread == "stage-infer"]
    assert not infer_syncs  # graphs are captured in the warm-up, on the main thread, before the stages run
    if cuda_graphs:  # the infer thread replays them: pose and seg on every frame
        assert sum(e.kind == "op" and e.what.startswith("graph replay") and e.thread == "stage-infer" for e in log) == 2 * FRAMES
        captures = [e for e in log if e.kind == "sync" and e.what == "torch.cuda.graph(): synchronize before capturing"]
        assert captures and all(e.thread not in ("stage-infer", "stage-collect") for e in captures)


def test_cuda_graphs_on_the_cpu_is_a_user_error(capsys):
    from realtime.cli import main

    assert main(["run", "clip.mp4", "--device", "cpu", "--cuda-graphs"]) == 2
    assert "--cuda-graphs needs a CUDA GPU" in capsys.readouterr().err
