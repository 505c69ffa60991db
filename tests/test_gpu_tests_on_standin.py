"""The GPU test files' own test functions, run on the stand-in GPU (tests/gpu_standin.py) in
every CI run. A real GPU is lent to few sessions; a GPU test that drifts from the code it calls
(the detector's default channel order became RGB and two GPU tests kept feeding it BGR, found
only on the first real GPU) should fail here first. The stand-in computes on the CPU, so these
check the tests' plumbing and the code paths they drive, not the GPU's numerics; the compiled
and FP8 ones need inductor on a GPU and stay GPU-only."""

import pytest
import torch

import tests.test_cuda_graphs_gpu as graphs_gpu
import tests.test_detector_graph_gpu as detector_gpu
import tests.test_models_gpu as models_gpu
from tests.gpu_standin import StandinGPU

CASES = {  # name -> (test function, its fixtures, its parameters)
    "fp32 pose": (models_gpu.test_fp32_on_gpu_meets_fixture_tolerances, ("fixtures_dir",), dict(task="pose", key="heatmaps")),
    "fp32 seg": (models_gpu.test_fp32_on_gpu_meets_fixture_tolerances, ("fixtures_dir",), dict(task="seg", key="seg_logits")),
    "codec": (models_gpu.test_codec_on_gpu_matches_cpu, ("fixtures_dir",), {}),
    "detector": (models_gpu.test_detector_call_makes_no_hidden_host_sync, ("rtmdet_fixtures_dir",), {}),
    "predictor": (models_gpu.test_predictor_frame_makes_no_hidden_host_sync, ("fixtures_dir",), dict(flip=False)),
    "predictor flip": (models_gpu.test_predictor_frame_makes_no_hidden_host_sync, ("fixtures_dir",), dict(flip=True)),
    "graphs in flight": (graphs_gpu.test_graphed_frames_in_flight_equal_eager, ("fixtures_dir",), {}),
    "detector graph": (detector_gpu.test_graphed_detector_equals_eager_and_syncs_only_its_wait, ("rtmdet_fixtures_dir",), {}),
}


@pytest.mark.parametrize("name", list(CASES))
def test_a_gpu_test_runs_on_the_standin(name, request, monkeypatch):
    """The test passes on the stand-in, and where it turns the GPU's sync checker on
    (`set_sync_debug_mode("error")`, which a CPU build lacks) the stand-in's log shows no host
    wait but an event's, as the checker allows."""
    test, fixtures, params = CASES[name]
    args = {fixture: request.getfixturevalue(fixture) for fixture in fixtures}
    checked: list[list[int]] = []  # [start, end] in the stand-in's log of each checked stretch
    with StandinGPU() as gpu:
        def sync_debug_mode(mode):
            if mode == "error":
                checked.append([len(gpu.rec.log)])
            else:
                checked[-1].append(len(gpu.rec.log))

        monkeypatch.setattr(torch.cuda, "set_sync_debug_mode", sync_debug_mode)
        test(**args, **params)
    waits = [e.what for start, end in checked for e in gpu.rec.log[start:end] if e.kind == "sync"]
    assert all(what.startswith("event ") for what in waits), waits
    if "sync" in test.__name__:
        assert checked and waits  # the checked calls ran, and each waited once, on its event
