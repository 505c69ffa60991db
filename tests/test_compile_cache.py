"""Compile by default on CUDA, with the compiled kernels kept between launches (realtime/models/compile_cache.py):
`run` compiles on CUDA unless told `--no-compile`; a first launch says in one line why it waits and saves what it
compiled, atomically, under the user's cache folder; the next launch with the same settings loads it; a damaged
file or an unwritable folder costs a recompile, never the run. The real round trip through inductor (a second
process with an empty inductor cache compiles nothing) runs on the CPU too."""

import logging
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from realtime.models import compile_cache
from realtime.models.archs import BackboneArch
from realtime.models.task_model import Sapiens2TaskModel, head_kwargs_for, lookup_arch

ROOT = Path(__file__).resolve().parents[1]
TINY = BackboneArch("tiny_e32_l2", 32, 2, 4)  # two blocks: dynamo traces it in a second


def _model():
    torch.manual_seed(0)
    return Sapiens2TaskModel("pose", TINY, head_kwargs_for("pose", lookup_arch("fixture_e32_h4_l18"))).eval()


def test_run_compiles_on_cuda_unless_told_not_to(monkeypatch):
    from realtime.build import compile_for
    from realtime.cli import build_parser
    from realtime.options import ModelOptions, RunOptions

    def options(**models):
        return RunOptions(source="x.mp4", models=ModelOptions(**models))

    parse = build_parser().parse_args
    assert parse(["run", "x.mp4"]).compile is None
    assert parse(["run", "x.mp4", "--no-compile"]).compile is False and parse(["run", "x.mp4", "--compile"]).compile is True
    monkeypatch.setattr(compile_cache, "compiles_here", lambda: True)  # a CUDA build of torch with Triton
    assert compile_for(options(), "cuda") is True
    assert compile_for(options(compile=False), "cuda") is False
    assert compile_for(options(), "cpu") is False
    assert compile_for(options(compile=True), "cpu") is True
    monkeypatch.setattr(compile_cache, "compiles_here", lambda: False)  # a CPU build, or no Triton: the plain path
    assert compile_for(options(), "cuda") is False
    monkeypatch.undo()
    assert compile_cache.compiles_here() is (torch.version.cuda is not None and _has_triton())


def _has_triton() -> bool:
    import importlib.util

    return importlib.util.find_spec("triton") is not None


def test_the_default_folder_is_the_users_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert compile_cache.default_folder() == tmp_path / "sapiens-realtime" / "compile"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert compile_cache.default_folder() == Path.home() / ".cache" / "sapiens-realtime" / "compile"
    a = compile_cache.artifacts_path(tmp_path, {"sdpa": "default", "sizes": {"pose": (1024, 768)}})
    assert a == compile_cache.artifacts_path(tmp_path, {"sizes": {"pose": (1024, 768)}, "sdpa": "default"})
    assert a != compile_cache.artifacts_path(tmp_path, {"sdpa": "triton", "sizes": {"pose": (1024, 768)}})
    assert a.parent == tmp_path and a.suffix == ".bin"


class FakeArtifacts:
    """torch.compiler's save/load_cache_artifacts, recorded (a backend that compiles nothing has nothing to save)."""

    def __init__(self, monkeypatch, data=b"compiled kernels"):
        self.saved, self.loaded, self.data = 0, [], data
        monkeypatch.setattr(torch.compiler, "save_cache_artifacts", self.save)
        monkeypatch.setattr(torch.compiler, "load_cache_artifacts", self.load)

    def save(self):
        self.saved += 1
        return self.data, None

    def load(self, data):
        self.loaded.append(data)
        if data != self.data:
            raise RuntimeError("not a cache this torch wrote")
        return object()


def _warm(folder, **options):
    from realtime.infer import Predictor

    def eager_backend(gm, example_inputs):
        return gm.forward

    torch._dynamo.reset()
    try:
        predictor = Predictor({"pose": _model()}, input_hw=(64, 48), max_batch=1, compile=eager_backend,
                              compile_cache=folder, **options)
        predictor.warm_up((72, 128))
        return predictor.predict(np.zeros((72, 128, 3), np.uint8), np.array([[10, 5, 60, 70]], np.float32))
    finally:
        torch._dynamo.reset()


def test_a_first_launch_says_why_it_waits_and_saves_the_next_loads(tmp_path, monkeypatch, caplog):
    fake = FakeArtifacts(monkeypatch)
    folder = tmp_path / "cache"
    with caplog.at_level(logging.INFO, logger="realtime.infer"):
        _warm(folder)
    waits = [r for r in caplog.records if "this launch waits" in r.getMessage()]
    assert len(waits) == 1 and waits[0].levelno == logging.WARNING and str(folder) in waits[0].getMessage()
    files = list(folder.iterdir())
    assert fake.saved == 1 and len(files) == 1 and files[0].read_bytes() == fake.data  # no temporary file left
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="realtime.infer"):
        _warm(folder)  # the second launch
    assert fake.loaded == [fake.data] and fake.saved == 1
    assert not [r for r in caplog.records if "waits" in r.getMessage()]
    assert any("loaded from" in r.getMessage() for r in caplog.records)
    _warm(folder, sdpa="math")  # other settings: their own file
    assert fake.saved == 2 and len(list(folder.iterdir())) == 2


def test_a_damaged_cache_is_replaced_and_an_unwritable_folder_only_logged(tmp_path, monkeypatch, caplog):
    fake = FakeArtifacts(monkeypatch)
    folder = tmp_path / "cache"
    _warm(folder)
    (path,) = folder.iterdir()
    path.write_bytes(b"half a file")
    with caplog.at_level(logging.WARNING):
        _warm(folder)
    assert "did not load" in caplog.text and path.read_bytes() == fake.data  # compiled again, and replaced
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the folder should be")
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        got = _warm(blocked / "compile")
    assert got.keypoints.shape == (1, 308, 2) and "could not save the compile cache" in caplog.text
    assert compile_cache.load(tmp_path / "none.bin") is False


ROUND_TRIP = r"""
import sys, torch
from pathlib import Path
from realtime.models import compile_cache
torch.set_num_threads(1)
path = Path(sys.argv[2])
loaded = compile_cache.load(path) if sys.argv[1] == "second" else False
m = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.SiLU(), torch.nn.Linear(32, 8)).eval()
with torch.inference_mode():
    torch.compile(m, dynamic=False)(torch.randn(4, 16))
if sys.argv[1] == "first":
    assert compile_cache.save(path) == path
from torch._dynamo.utils import counters
print("RESULT", loaded, counters["inductor"]["fxgraph_cache_hit"], counters["inductor"]["fxgraph_cache_miss"])
"""


@pytest.mark.slow
def test_the_cache_round_trip_through_inductor(tmp_path):
    """Two processes, each with an empty inductor cache of its own (as after a reboot empties /tmp): the second
    compiles nothing, every graph comes from the file the first saved (inductor on the CPU: a minute each here)."""
    path = tmp_path / "kernels.bin"
    results = []
    for run in ("first", "second"):
        env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": str(tmp_path / f"inductor-{run}"), "PYTHONPATH": str(ROOT)}
        done = subprocess.run([sys.executable, "-c", ROUND_TRIP, run, str(path)], cwd=ROOT, env=env, capture_output=True,
                              text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
        results.append(next(line for line in done.stdout.splitlines() if line.startswith("RESULT")).split()[1:])
    assert results[0] == ["False", "0", "1"]  # the first launch compiled its graph
    assert results[1] == ["True", "1", "0"]  # the second loaded it: a hit, nothing compiled


@pytest.mark.parametrize("given, words", [
    ({"compile": "yes"}, "compile='yes' is not True or False"),
    ({"fp8": "everything"}, "fp8='everything' is not one of attention, ffn, attention+ffn"),
    ({"dual_backbone": 1}, "dual_backbone=1 is not True or False"),
    ({"fuse": None}, "fuse=None is not True or False"),
])
def test_the_new_options_are_refused_in_one_sentence_naming_the_python_argument(given, words):
    from realtime.build import check_options
    from realtime.errors import UserError
    from realtime.options import RunOptions

    with pytest.raises(UserError, match=words.replace("(", r"\(").replace("+", r"\+")) as error:
        check_options(RunOptions.from_names("x.mp4", {"device": "cpu", **given}))
    assert "\n" not in str(error.value)


def test_the_new_flags_from_the_command_line(capsys):
    from realtime.cli import main

    for flags, words in ((["--fp8", "ffn"], "drop --fp8"), (["--no-compile", "--fp8"], "drop --fp8")):
        assert main(["run", "no_such_video.mp4", "--device", "cpu", *flags]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and words in err and "Traceback" not in err
