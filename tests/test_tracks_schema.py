"""One tracks reader with a schema check (realtime.record.check_frame), through the CLI:
a malformed field is one `error:` sentence naming the file, the line and the field, from
`stream` (before any datagram is sent), `export` and `smooth`; text numbers and non-integer
ids are refused; unknown fields are accepted; a `[null, true]` contact stays unknown in every
export; `.gltf` is JSON, `.glb` binary, both valid for the Khronos validator."""

from __future__ import annotations

import csv
import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from export_synthetic import write_synthetic
from realtime.frames import Frame, Person
from realtime.sinks.tracks import TrackWriter
from tests.mocap_synthetic import FPS, NAMES, synthetic_clip

ROOT = Path(__file__).resolve().parents[1]
NODE_MODULES = Path(os.environ.get("SAPIENS_NODE_MODULES", "/opt/sapiens-ci-node/node_modules"))


def _cli(*argv) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "realtime.cli", *map(str, argv)], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"})


def _one_error(proc: subprocess.CompletedProcess, *expected: str) -> str:
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert proc.stderr.startswith("error: ") and proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr, proc.stderr
    for text in expected:
        assert text in proc.stderr, proc.stderr
    return proc.stderr


def _break(tracks: Path, out: Path, line: int, change) -> Path:
    """A copy of `tracks` whose line `line` (1-based) has its first person changed by `change`."""
    lines = tracks.read_text().splitlines()
    record = json.loads(lines[line - 1])
    change(record["people"][0])
    lines[line - 1] = json.dumps(record)
    out.write_text("\n".join(lines) + "\n")
    return out


MALFORMED = {
    "box of 3 numbers": (lambda p: p.update(box=[1, 2, 3]), "box"),
    "kpts3d of 100 points": (lambda p: p.update(kpts3d=[[0.0, 0.0, 1.0]] * 100), "kpts3d has shape 100 x 3"),
    "kpts3d of 2 columns": (lambda p: p.update(kpts3d=[row[:2] for row in p["kpts3d"]]), "kpts3d has shape"),
    "id seven as text": (lambda p: p.update(id="seven"), "id is 'seven', not a whole number"),
    "id 1.5": (lambda p: p.update(id=1.5), "id is 1.5, not a whole number"),
    "text numbers in kpts": (lambda p: p["kpts"].__setitem__(0, ["12.5", "7", "0.9"]), "kpts holds '12.5', not a number"),
    "one text number among numbers": (lambda p: p["kpts"].__setitem__(3, [1.0, None, "0.9"]), "kpts holds '0.9'"),
    "a boolean as a number": (lambda p: p["kpts"].__setitem__(0, [True, 1.0, 0.5]), "kpts holds True"),
    "contacts of three": (lambda p: p.update(contacts=[1, 0, 1]), "contacts"),
    "face weight as text": (lambda p: p.update(face={"jawOpen": "0.5"}), "face jawOpen is '0.5'"),
}


@pytest.fixture(scope="module")
def take(tmp_path_factory) -> Path:
    """308 keypoints with 3D and contacts; the left foot of frame 5 is unknown ([null, true])."""
    path = tmp_path_factory.mktemp("schema") / "take.jsonl"
    camera = synthetic_clip(12)[4]
    image = np.zeros((2, 2, 3), np.uint8)
    with TrackWriter(path, keypoint_names=NAMES, image_wh=(640, 480), fps=FPS, source="synthetic", model={},
                     tracked=True) as writer:
        for t in range(12):
            xy = 500.0 * camera[t, :, :2] / camera[t, :, 2:] + [320.0, 240.0]
            person = Person(box=np.array([100, 20, 500, 470], np.float32), track_id=1, keypoints=xy.astype(np.float32),
                            keypoint_scores=np.where(np.isfinite(camera[t, :, 0]), 0.9, 0.0).astype(np.float32),
                            keypoints3d=camera[t].astype(np.float32), contacts=np.array([t % 2 == 0, True]))
            writer.write(Frame(index=t, timestamp=t / FPS, image=image, people=(person,)))
    lines = path.read_text().splitlines()
    record = json.loads(lines[6])  # line 7 = frame 5
    record["people"][0]["contacts"] = [None, 1]
    record["people"][0]["gaze"] = {"left": [0, 0, 1]}  # a field this reader does not know: accepted
    lines[6] = json.dumps(record)
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize("case", list(MALFORMED))
def test_stream_stops_at_a_malformed_line_before_sending_anything(take, tmp_path, case):
    change, words = MALFORMED[case]
    broken = _break(take, tmp_path / "broken.jsonl", 9, change)
    receiver = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    receiver.bind(("127.0.0.1", 0))
    receiver.settimeout(0.2)
    try:
        proc = _cli("stream", broken, "--osc", f"127.0.0.1:{receiver.getsockname()[1]}")
        _one_error(proc, f"{broken} line 9 does not follow the tracks schema", words)
        with pytest.raises(socket.timeout):
            receiver.recv(65536)  # nothing was sent: the whole file is checked first
    finally:
        receiver.close()


@pytest.mark.parametrize("command", ["export", "smooth"])
@pytest.mark.parametrize("case", ["text numbers in kpts", "id seven as text", "box of 3 numbers"])
def test_export_and_smooth_refuse_the_same_lines_with_their_number(take, tmp_path, command, case):
    change, words = MALFORMED[case]
    broken = _break(take, tmp_path / "broken.jsonl", 4, change)
    extra = ["--to", "csv"] if command == "export" else []
    _one_error(_cli(command, broken, *extra), "line 4 does not follow the tracks schema", words)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["broken.jsonl"]


def test_stream_checks_its_file_and_options_without_importing_pytorch():
    """`sapiens-rt stream` replays tracks, no model: the replay and the stages it runs import no
    PyTorch (1.5 s of a 2.2 s start on the 2-core VM), so a bad file or option is answered at once;
    the task table brings it in when the senders are made."""
    code = "import sys, realtime.cli, realtime.replay; print(sorted(m for m in sys.modules if m.split('.')[0] == 'torch'))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0 and done.stdout.strip() == "[]", (done.stdout[-2000:], done.stderr[-2000:])


@pytest.mark.parametrize("speed", ["1e-300", "1e-4", "5000"])
def test_stream_refuses_a_speed_whose_waits_cannot_be_slept(take, speed):
    _one_error(_cli("stream", take, "--osc", "127.0.0.1:9", "--speed", speed), f"--speed {float(speed):g} is outside")


def test_an_unknown_foot_stays_unknown_in_csv_and_curves(take, tmp_path):
    done = _cli("export", take, "--to", "csv", "-o", tmp_path / "t.csv")
    assert done.returncode == 0, done.stderr
    rows = list(csv.DictReader(open(tmp_path / "t.csv", newline="")))
    assert (rows[5]["p1_contact_left"], rows[5]["p1_contact_right"]) == ("", "1")  # not 0: unknown is never "off"
    assert (rows[4]["p1_contact_left"], rows[6]["p1_contact_left"]) == ("1", "1")
    done = _cli("export", take, "--to", "bvh", "-o", tmp_path / "t.bvh")
    assert done.returncode == 0, done.stderr
    curves = json.loads((tmp_path / "t.bvh.curves.json").read_text())
    assert None in curves["contacts"]["left"] and None not in curves["contacts"]["right"]


def test_trc_header_names_the_final_file(take, tmp_path):
    done = _cli("export", take, "--to", "trc", "-o", tmp_path / "walk.trc")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "walk.trc").read_text().splitlines()[0].split("\t")[-1] == "walk.trc"


def test_gltf_is_json_glb_is_binary_and_both_pass_the_khronos_validator(take, tmp_path):
    for fmt, name in (("gltf", "walk.gltf"), ("glb", "walk.glb"), ("gltf", "plain.glb")):
        done = _cli("export", take, "--to", fmt, "-o", tmp_path / name)
        assert done.returncode == 0, done.stderr
    document = json.loads((tmp_path / "walk.gltf").read_text())  # JSON, not GLB bytes
    assert document["asset"]["version"] == "2.0"
    assert document["buffers"][0]["uri"].startswith("data:application/octet-stream;base64,")
    for name in ("walk.glb", "plain.glb"):
        assert (tmp_path / name).read_bytes()[:4] == b"glTF"
    from test_motion_clients import khronos_reports

    reports = khronos_reports([str(tmp_path / n) for n in ("walk.gltf", "walk.glb")])
    for report in reports:
        assert report["errors"] == 0 and report["warnings"] == 0, report


def test_the_synthetic_writer_s_files_still_read(tmp_path):
    tracks = write_synthetic(tmp_path / "run.jsonl")
    from realtime.export.jsonl import read_tracks

    assert len(read_tracks(tracks)) > 0
