"""The stand-in GPU's race detector (tests/gpu_standin.py): it must catch each way the CUDA
code can read memory before the stream that writes it is known to be done, and stay
quiet on the real code. Races are planted in scratch copies of the real methods (their
source with one edit), so a test breaks if the code it plants into changes."""

import copy
import inspect
import sys
import textwrap
import threading

import numpy as np
import pytest
import torch
from safetensors.torch import load_file

from tests.gpu_standin import StandinGPU, StreamRace

# -- the detector itself, on hand-written stream code


def test_a_read_on_another_stream_needs_a_wait():
    with StandinGPU():
        side = torch.cuda.Stream()
        x = torch.ones(4, device="cuda") * 2  # written on the default stream
        race = r"read on stream .* written on stream default .* at .*test_stream_races.py"
        with torch.cuda.stream(side), pytest.raises(StreamRace, match=race):
            x + 1
    with StandinGPU() as gpu:
        side = torch.cuda.Stream()
        x = torch.ones(4, device="cuda") * 2
        done = torch.cuda.Event()
        done.record()
        side.wait_event(done)
        with torch.cuda.stream(side):
            assert (x + 1).cpu().tolist() == [3.0] * 4
        assert not gpu.rec.races


def test_an_event_covers_only_what_came_before_it_and_waits_are_transitive():
    with StandinGPU():
        a, b, c = torch.cuda.Stream(), torch.cuda.Stream(), torch.cuda.Stream()
        with torch.cuda.stream(a):
            early = torch.zeros(2, device="cuda") + 1
            event = a.record_event()
            late = torch.zeros(2, device="cuda") + 2
        b.wait_event(event)
        c.wait_stream(b)  # c has seen what b has seen: a up to the event
        with torch.cuda.stream(c):
            early * 2
            with pytest.raises(StreamRace):
                late * 2


def test_the_host_must_wait_before_reading_a_non_blocking_download():
    with StandinGPU() as gpu:
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        x = torch.arange(3.0, device="cuda")
        side.wait_stream(torch.cuda.current_stream())
        host = torch.empty(3, pin_memory=True)
        with torch.cuda.stream(side):
            host.copy_(x, non_blocking=True)
            done = torch.cuda.Event()
            done.record()
        with pytest.raises(StreamRace, match="read by the host"):
            host.numpy()
        assert torch.cuda.Event().query() and side.query()  # asking is not waiting
        assert not gpu.rec.syncs()
        done.synchronize()
        assert host.numpy().tolist() == [0.0, 1.0, 2.0]
        # and the host may not refill a pinned buffer a queued upload still reads
        src = torch.ones(3).pin_memory()
        with torch.cuda.stream(side):
            src.to("cuda", non_blocking=True)
        with pytest.raises(StreamRace, match="write by the host"):
            src.numpy()[...] = 2


def test_new_sync_kinds_are_counted():
    with StandinGPU() as gpu:
        x = torch.arange(6.0, device="cuda")
        gpu.rec.clear()
        x[torch.tensor([0, 2])]  # a host index tensor
        x.repeat_interleave(torch.ones(6, dtype=torch.long, device="cuda"))
        x.repeat_interleave(torch.ones(6, dtype=torch.long, device="cuda"), output_size=6)  # size given: no wait
        x + torch.ones(6)  # mixed devices
        x + torch.tensor(1.0)  # a 0-dim host tensor is a scalar argument: no wait
        torch.cuda.empty_cache()
        torch.cuda.current_stream().query()
        whats = [s.what for s in gpu.rec.syncs()]
        assert len(whats) == 4, whats
        assert ["host index" in whats[0], "repeat_interleave" in whats[1], "mixing" in whats[2],
                "empty_cache" in whats[3]] == [True] * 4


def test_each_thread_has_its_own_current_stream():
    with StandinGPU() as gpu:
        side = torch.cuda.Stream()
        seen = {}

        def other():
            seen["stream"] = torch.cuda.current_stream().name
            torch.ones(2, device="cuda") + 1

        with torch.cuda.stream(side):
            thread = threading.Thread(target=other, name="worker")
            thread.start()
            thread.join()
        assert seen["stream"] == "default"
        assert any(e.kind == "op" and e.stream == "default" and "add" in e.what for e in gpu.rec.log)


# -- the real code runs clean, and each planted race is caught


def planted(owner, method: str, *edits: tuple[str, str]):
    """`owner.method` rebuilt from its source with each (old, new) edit applied once (kept at
    its file and lines, so a race names the real places)."""
    function = getattr(owner, method)
    lines, first = inspect.getsourcelines(function)
    source = "".join(lines)
    for old, new in edits:
        assert source.count(old) == 1, f"{owner.__name__}.{method} no longer contains {old!r}"
        source = source.replace(old, new)
    namespace = dict(vars(sys.modules[owner.__module__]))
    exec(compile("\n" * (first - 1) + textwrap.dedent(source), inspect.getsourcefile(function), "exec"), namespace)
    return namespace[method]


IMAGE = np.random.default_rng(0).integers(0, 256, (96, 128, 3), dtype=np.uint8)
BOXES = np.array([[10, 10, 60, 90], [40, 5, 120, 95], [0, 0, 127, 95]], np.float32)


@pytest.fixture(scope="module")
def task_models(fixtures_dir):
    from realtime.models import load_model

    return {task: load_model(task, fixtures_dir / f"{task}_weights.safetensors") for task in ("pose", "seg")}


def _predict_on_standin(task_models, frames=2):
    from realtime.infer import Predictor

    with StandinGPU() as gpu:
        models = {task: copy.deepcopy(model).to("cuda") for task, model in task_models.items()}
        predictor = Predictor(models, device="cuda", input_hw=(128, 96))
        for _ in range(frames):
            predictor.predict(IMAGE, BOXES)
        return gpu


def test_the_predictor_runs_without_races(task_models):
    gpu = _predict_on_standin(task_models)
    assert not gpu.rec.races


HOST_READ = r"read by the host \(\.numpy\(\)\) at .*infer.py.* written on stream .* at .*infer.py"
RACES = {  # name: (method, edits, what the race report must say)
    "event on the wrong stream": ("_download", [("done.record(collect)", "done.record(self._streams[name])")], HOST_READ),
    "event before the copies": ("_download", [
        ("        done = torch.cuda.Event(blocking=True)\n        done.record(collect)\n", ""),
        ("        pinned = {}\n",
         "        pinned = {}\n        done = torch.cuda.Event(blocking=True)\n        done.record(collect)\n")],
        HOST_READ),
    "no collect wait": ("_download", [("collect.wait_stream(self._streams[name])", "pass")],
                        r"read on stream .*copy_.*infer.py.* written on stream .*tasks.py"),
    "no upload wait": ("_on_stream", [('stream.wait_stream(self._streams["upload"])', "pass")],
                       r"read on stream .* written on stream .*infer.py:\d+ \(_upload\)"),
    "download read before its wait": ("collect", [
        ("        if launched.done is not None:\n            launched.done.synchronize()  # the frame's only host wait\n"
         "        host = {name: t.numpy() for name, t in launched.outputs.items()}\n",
         "        host = {name: t.numpy() for name, t in launched.outputs.items()}\n"
         "        if launched.done is not None:\n            launched.done.synchronize()\n")],
        HOST_READ),
}


@pytest.mark.parametrize("race", list(RACES))
def test_each_planted_race_in_the_predictor_is_caught(task_models, monkeypatch, race):
    from realtime.infer import Predictor

    method, edits, report = RACES[race]
    monkeypatch.setattr(Predictor, method, planted(Predictor, method, *edits))
    with pytest.raises(StreamRace, match=report):  # both places named
        _predict_on_standin(task_models)


def test_a_download_read_before_its_wait_in_the_detector_is_caught(rtmdet_fixtures_dir, monkeypatch):
    from realtime.models.rtmdet import Detector, load_detector

    image = load_file(str(rtmdet_fixtures_dir / "tiny_w025_case_a.safetensors"))["image_bgr_uint8"].numpy()
    weights = rtmdet_fixtures_dir / "tiny_w025_state_dict.safetensors"
    with StandinGPU() as gpu:
        det = load_detector(weights, widen=0.25, device="cuda")
        det(image)
        det(image)
        assert not gpu.rec.races
        monkeypatch.setattr(Detector, "_top_candidates", planted(Detector, "_top_candidates", (
            "        done.synchronize()\n        return host.numpy().copy()\n",
            "        rows = host.numpy().copy()\n        done.synchronize()\n        return rows\n")))
        with pytest.raises(StreamRace, match=r"by the host .* at .*rtmdet.py.* written on stream"):
            det(image)


# -- CUDA graphs on the stand-in


def test_a_graph_records_at_capture_and_replays_into_the_same_memory():
    with StandinGPU() as gpu:
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        static_in = torch.zeros(3, device="cuda")
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, stream=side):
            static_out = (static_in * 2 + 1).relu()
        assert torch.isnan(static_out.elem).all()  # captured, not run
        for value in (1.0, 5.0):
            with torch.cuda.stream(side):
                static_in.copy_(torch.full((3,), value, device="cuda"))
                gpu.rec.clear()
                graph.replay()
                assert [e.what for e in gpu.rec.log if e.kind == "op"] == ["graph replay (3 kernels)"]
                got = static_out.cpu().tolist()
            assert got == [2 * value + 1] * 3
        with torch.cuda.stream(side):
            graph.replay()
        with pytest.raises(StreamRace, match=r"written on stream .* \(graph replay\)"):  # the default stream did not wait
            static_out + 1


def test_a_sync_inside_a_capture_raises():
    with StandinGPU():
        x = torch.ones(3, device="cuda")
        graph = torch.cuda.CUDAGraph()
        with pytest.raises(RuntimeError, match="not permitted when stream is capturing"):
            with torch.cuda.graph(graph, stream=torch.cuda.Stream()):
                (x * 2).sum().item()
