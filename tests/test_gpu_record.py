"""bench/gpu_record.py: every GPU run kept as one JSON file, written atomically, nothing non-finite;
the back-filled runs are valid records; docs/gpu-performance.md quotes the newest."""

import json
import math
import os
from pathlib import Path

import pytest

from bench import gpu_record as rec

ROOT = Path(__file__).resolve().parents[1]


def _record(**changes):
    record = rec.new_record(device="NVIDIA H100 80GB HBM3", torch_version="2.11.0+cu130", commit="73a27a1",
                            date="2026-11-28T04:17Z")
    record["results"] = [rec.result("default", seg_every=1, fps=48.2, warmup_s=77.0, launches=11),
                         rec.result("default", seg_every=2, fps=63.0, warmup_s=None)]
    record["microbenchmarks"] = {"linear": [{"layer": "w12", "m": 3081, "kind": "bf16", "us": 120.5, "tflops": 430.1}]}
    record.update(changes)
    return record


def test_a_written_record_has_every_field_with_its_type(tmp_path):
    path = rec.write_record(_record(), tmp_path)
    assert path.parent == tmp_path and path.name == "2026-11-28T0417Z-nvidia-h100-80gb-hbm3.json"
    back = json.loads(path.read_text())
    for name, kind in rec.REQUIRED.items():
        assert isinstance(back[name], kind), name
    assert back["input_size"] == "1024x768" and back["people"] == 1
    for row in back["results"]:
        assert isinstance(row["mode"], str) and isinstance(row["seg_every"], int) and isinstance(row["fps"], float)
        assert row["warmup_s"] is None or isinstance(row["warmup_s"], float)
    assert back["results"][0]["mode"] == "default" and back["results"][1]["warmup_s"] is None
    assert rec.read_record(path) == back


@pytest.mark.parametrize("where", ["fps", "warmup", "nested"])
@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_nothing_non_finite_is_written(tmp_path, where, value):
    record = _record()
    if where == "fps":
        record["results"][0]["fps"] = value
    elif where == "warmup":
        record["results"][1]["warmup_s"] = value
    else:
        record["microbenchmarks"]["linear"][0]["tflops"] = value
    with pytest.raises(ValueError, match="finite|fps|warm"):
        rec.write_record(record, tmp_path)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("change, words", [
    ({"people": "1"}, "people"), ({"people": True}, "people"), ({"people": 0}, "people"),
    ({"device": ""}, "device"), ({"date": "yesterday"}, "date"), ({"date": "2026-11-28 04:17"}, "date"),
    ({"input_size": "1024"}, "input_size"), ({"input_size": "0x768"}, "input_size"), ({"results": {}}, "results"),
    ({"results": [{"mode": "default", "seg_every": 1, "fps": 48.2}]}, "warmup_s"),
    ({"results": [{"mode": "", "seg_every": 1, "fps": 48.2, "warmup_s": 1.0}]}, "mode"),
    ({"results": [{"mode": "default", "seg_every": 0, "fps": 48.2, "warmup_s": 1.0}]}, "seg_every"),
    ({"results": [{"mode": "default", "seg_every": 1, "fps": -1.0, "warmup_s": 1.0}]}, "fps"),
    ({"results": [{"mode": "default", "seg_every": 1, "fps": True, "warmup_s": 1.0}]}, "fps"),
    ({"results": [{"mode": "default", "seg_every": 1.5, "fps": 4.0, "warmup_s": 1.0}]}, "seg_every"),
    ({"microbenchmarks": {"linear": {"a": 1}}}, "microbenchmarks"),
    ({"microbenchmarks": {"linear": [{"when": object()}]}}, "object"),
])
def test_a_wrong_field_is_named_and_nothing_is_written(tmp_path, change, words):
    with pytest.raises(ValueError, match=words):
        rec.write_record(_record(**change), tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_the_write_is_atomic_and_leaves_no_temporary_file(tmp_path, monkeypatch):
    """Ctrl+C (or a crash) between writing and renaming keeps the previous version whole."""
    record = _record()
    path = rec.write_record(record, tmp_path)
    before = path.read_bytes()
    record["results"].append(rec.result("--no-compile", seg_every=1, fps=34.7, warmup_s=4.3))

    def interrupted(src, dst):
        raise KeyboardInterrupt

    monkeypatch.setattr(rec.os, "replace", interrupted)
    with pytest.raises(KeyboardInterrupt):
        rec.write_record(record, tmp_path, path=path)
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == [path.name]
    monkeypatch.undo()
    rec.write_record(record, tmp_path, path=path)  # the run's own file, rewritten as results come in
    assert len(rec.read_record(path)["results"]) == 3
    assert sorted(p.name for p in tmp_path.iterdir()) == [path.name]


def test_a_new_run_never_overwrites_another_runs_file(tmp_path):
    first = rec.write_record(_record(), tmp_path)
    second = rec.write_record(_record(commit="abc1234"), tmp_path)  # same minute, same device
    assert first != second and second.name.endswith("-2.json")
    assert rec.read_record(first)["commit"] == "73a27a1" and rec.read_record(second)["commit"] == "abc1234"
    assert rec.newest(tmp_path)[0] == second  # same date: the later name


def test_a_record_that_cannot_be_written_raises_an_os_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    with pytest.raises(OSError):
        rec.write_record(_record(), blocker)  # a file where the folder should be


def test_the_back_filled_runs_are_valid_and_say_what_came_from_text():
    runs = rec.records()
    assert len(runs) >= 5
    back = [(p, r) for p, r in runs if "backfilled" in r]
    assert len(back) == 5
    devices = [r["device"] for _, r in back]
    assert devices.count("NVIDIA H200") == 4 and devices.count("NVIDIA H100 80GB HBM3") == 1
    h100 = next(r for _, r in back if "H100" in r["device"])
    fps = {(row["mode"], row["seg_every"]): row["fps"] for row in h100["results"]}
    assert fps[("default", 1)] == 34.7 and fps[("--compile", 1)] == 48.2  # as issue 52 quotes them
    for path, record in back:
        assert path.name == rec.file_name(record)
        assert "bench/RESULTS.md" in record["backfilled"]["all"]
        assert any(row["mode"] == "default" for row in record["results"])


def test_docs_quote_the_newest_record():
    path, record = rec.newest()
    docs = (ROOT / "docs" / "gpu-performance.md").read_text()
    assert rec.quote(path, record) in docs, "docs/gpu-performance.md must quote the newest bench/gpu_runs record"
    assert docs.count("Newest record: ") == 1


def test_the_folder_holds_only_records():
    names = os.listdir(rec.RUNS)
    assert names and all(name.endswith(".json") and not name.startswith(".") for name in names)
