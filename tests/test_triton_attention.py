"""The Triton kernels: `--sdpa triton` (realtime/models/triton_attention.py) and `--fuse`
(realtime/models/triton_fused.py) equal eager on the CPU under Triton's interpreter (tests/triton_interpreted.py,
in a process started with TRITON_INTERPRET=1: grouped-query heads, ragged tiles, the 5B's head size, bf16,
fixture models within the golden fixtures' tolerance); the attention tiles fill the waves at the 0.4B's
shapes; where they cannot run, one sentence says why."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

if os.environ.get("CI") == "true":
    import triton  # noqa: F401  (CI installs the dev extra, which brings it: a missing one fails here, not skips)
else:
    pytest.importorskip("triton", reason="the triton package (the dev extra installs it)")

from realtime.errors import UserError  # noqa: E402
from realtime.models import load_model, triton_attention  # noqa: E402
from realtime.models.sapiens2 import set_fused_kernels, set_sdpa_backend  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def test_the_kernels_under_the_interpreter(tmp_path):
    env = {**os.environ, "TRITON_INTERPRET": "1", "TRITON_CACHE_DIR": str(tmp_path / "triton"),
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/triton_interpreted.py"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert " passed" in done.stdout and "skipped" not in done.stdout


def test_tiles_fill_the_waves_at_the_04bs_shapes():
    assert triton_attention.blocks(1, 16, 3081, 132)[0] == 64  # 784 tiles, 2 per SM: 2.97 waves, against 3.03 of 128
    assert triton_attention.blocks(2, 16, 3081, 132)[0] == 64  # the dual backbone: 5.94 waves
    assert triton_attention.waves(16 * 49, 264) > 0.98 and triton_attention.waves(16 * 25, 132) < 0.8
    assert triton_attention.blocks(1, 16, 2048, 132)[0] == 128  # a tie keeps the larger tile


def test_where_it_cannot_run_one_sentence_says_why(monkeypatch, fixtures_dir):
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    model = load_model("pose", fixtures_dir / "pose_weights.safetensors")
    with pytest.raises(UserError, match="runs on CUDA GPUs") as cpu:
        set_sdpa_backend(model, "triton")
    monkeypatch.setattr(triton_attention, "triton", None)
    with pytest.raises(UserError, match="pip install triton") as missing:
        set_sdpa_backend(model, "triton")
    for error in (cpu.value, missing.value):
        assert "\n" not in str(error) and ". " not in str(error)  # one sentence
    from realtime.infer import Predictor

    with pytest.raises(UserError, match="triton"):
        Predictor({"pose": model}, input_hw=(64, 48), sdpa="triton")
    with pytest.raises(UserError, match=r"fuse=True \(--fuse\) needs the triton package"):
        Predictor({"pose": model}, input_hw=(64, 48), fuse=True)
    monkeypatch.undo()
    with pytest.raises(UserError, match=r"fuse=True \(--fuse\) runs on CUDA GPUs.*drop it\.$"):
        set_fused_kernels(model)
    assert not model.backbone.fused  # refused: nothing changed


