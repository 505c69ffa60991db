"""Shared test helpers: where the reference fixtures live, tiny synthetic media."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# The golden fixtures travel with the tests (tests/reference, see its README and
# MANIFEST); SAPIENS_REFERENCE_DIR points elsewhere, e.g. at a regenerated set.
REFERENCE = Path(os.environ.get("SAPIENS_REFERENCE_DIR") or Path(__file__).resolve().parent / "reference")
FIXTURES = REFERENCE / "fixtures"
RTMDET_FIXTURES = REFERENCE / "rtmdet" / "fixtures"
RTMDET_SAFETENSORS = "tiny_w025_state_dict.safetensors"


@pytest.fixture(scope="session")
def reference_dir() -> Path:
    if not (FIXTURES / "README.md").is_file():
        pytest.fail(f"golden fixtures not found at {FIXTURES}; unset SAPIENS_REFERENCE_DIR to use the ones in tests/reference.")
    return REFERENCE


@pytest.fixture(scope="session")
def fixtures_dir(reference_dir: Path) -> Path:
    return FIXTURES


@pytest.fixture(scope="session")
def rtmdet_fixtures_dir(reference_dir: Path, tmp_path_factory) -> Path:
    """The RTMDet fixtures, with the tiny state dict as .safetensors beside the .pth.

    The repository keeps the tiny checkpoint once, as mmdet's .pth; the official
    .safetensors copy holds the same tensors and is rebuilt from it here
    (test_reference.py checks the rebuilt file is byte-identical to the official one)."""
    if (RTMDET_FIXTURES / RTMDET_SAFETENSORS).is_file():
        return RTMDET_FIXTURES
    folder = tmp_path_factory.mktemp("rtmdet_fixtures")
    for item in RTMDET_FIXTURES.iterdir():
        (folder / item.name).symlink_to(item)
    rebuild_rtmdet_safetensors(RTMDET_FIXTURES / "tiny_w025_checkpoint.pth", folder / RTMDET_SAFETENSORS)
    return folder


def rebuild_rtmdet_safetensors(pth: Path, out: Path) -> None:
    import torch
    from safetensors.torch import save_file

    state_dict = torch.load(pth, map_location="cpu", weights_only=True)["state_dict"]
    metadata = {"format": "mmdet RTMDet state_dict (tiny fixture variant widen_factor=0.25, deepen_factor=0.67, num_classes=1)"}
    # the .pth stores the shared head convs once; safetensors wants one buffer per key
    save_file({k: v.contiguous().clone() for k, v in state_dict.items()}, str(out), metadata=metadata)


@pytest.fixture
def no_tf32():
    """fp32 matmuls and convolutions on a real GPU without TF32, so they meet fp32 tolerances."""
    import torch

    old = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    yield
    torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = old


@pytest.fixture(scope="module")
def standin_task_models(fixtures_dir):
    """The pose and seg fixture models with channels_last heads, as a CUDA Predictor makes
    them, so a CPU reference computes the same floats as the stand-in GPU."""
    from realtime.models import heads, load_model

    models = {task: load_model(task, fixtures_dir / f"{task}_weights.safetensors") for task in ("pose", "seg")}
    for model in models.values():
        heads.to_channels_last(model)
    return models


@pytest.fixture(scope="session", autouse=True)
def _one_torch_thread():
    """One intra-op thread in the test process. The tests' models are tiny, so a second thread buys
    little, while two OpenMP threads stall at every op whenever anything else wants a core (the
    suite's own subprocesses, spawned workers and stage threads, or a neighbour): the stand-in GPU
    tests ran 2-8x slower that way. No code path changes: the only thread-dependent choice,
    sapiens2.column_plan, decides the same for 1 and 2 threads (test_models_fused covers the others)."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(autouse=True)
def _no_hub_downloads(monkeypatch):
    """Tests never reach the network; code that would download must say so clearly."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


_CHECKOUT = Path(__file__).resolve().parents[1]


def _entries() -> set[str]:
    """What sits in the checkout's top folder and in recordings/ (a run's default output folder)."""
    top = {p.name for p in _CHECKOUT.iterdir() if not p.name.startswith(".") and p.name != "__pycache__"
           and not p.name.endswith(".egg-info")}
    recordings = _CHECKOUT / "recordings"
    return top | ({f"recordings/{p.name}" for p in recordings.iterdir()} if recordings.is_dir() else set())


@pytest.fixture(autouse=True)
def _writes_only_under_tmp():
    """Tests write only under their temporary folders: a file or folder a test leaves in the checkout
    (a run's default recordings/<source>-<time>/, a file named `-`) fails it, naming what it left."""
    before = _entries()
    yield
    left = sorted(_entries() - before)
    assert not left, (f"{left} appeared in the checkout {_CHECKOUT} during this test (made by it, or by a test beside it "
                      "under pytest-xdist); give that run its outputs under tmp_path (--out/--tracks/--output-dir, "
                      "OutputOptions(output_dir=...))")
