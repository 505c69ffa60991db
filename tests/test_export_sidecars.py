"""Nothing left by a failed export (docs/durability.md): an export writes its sidecars
(`NAME.camera.csv`, `NAME.bvh.marks.json`, `NAME.glb.curves.json`) only after its main file, and
moves them all into place together, so a refused export, a failed one or Ctrl+C leaves the folder
as it was; a re-export removes the sidecars it no longer writes; a camera whose intrinsics give
no lens is one sentence, and nothing non-finite reaches a file."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from realtime.cli import main
from realtime.export import staging
from realtime.frames import Frame, Person
from realtime.sinks.tracks import TrackWriter
from tests.mocap_synthetic import FPS, NAMES, synthetic_clip

ROOT = Path(__file__).resolve().parents[1]
FRAMES = 30


def _take(path: Path, *, camera: dict | None = None, with_3d: bool = True) -> Path:
    """The synthetic person (tests.mocap_synthetic) as a tracks file; `camera`: the "camera" field of
    every frame (its position moved along x by 1 cm a frame), as a run with the world stage writes it."""
    xyz = synthetic_clip(FRAMES)[4]
    with TrackWriter(path, keypoint_names=NAMES, image_wh=(640, 480), fps=FPS, source="synthetic.mp4", model={}) as writer:
        for t in range(FRAMES):
            xy = 500.0 * xyz[t, :, :2] / xyz[t, :, 2:] + [320.0, 240.0]
            person = Person(box=np.array([100, 20, 500, 470], np.float32), track_id=1, keypoints=xy.astype(np.float32),
                            keypoint_scores=np.full(len(NAMES), 0.9, np.float32),
                            keypoints3d=xyz[t].astype(np.float32) if with_3d else None)
            writer.write(Frame(index=t, timestamp=t / FPS, image=np.zeros((2, 2, 3), np.uint8), people=(person,)))
    if camera is not None:
        lines = path.read_text().splitlines()
        for i in range(1, len(lines)):
            record = json.loads(lines[i])
            record["camera"] = {**camera, "position": [camera["position"][0] + 0.01 * i, *camera["position"][1:]]}
            lines[i] = json.dumps(record)
        path.write_text("\n".join(lines) + "\n")
    return path


CAMERA = {"position": [0.0, 1.5, 3.0], "rotation": [0.0, 1.0, 0.0, 0.0], "intrinsics": [500.0, 500.0, 320.0, 240.0],
          "status": "tracking", "world": 1, "grounded": 1}


@pytest.fixture
def moving(tmp_path) -> Path:
    """A take filmed by a (slowly sliding) camera the world stage tracked."""
    return _take(tmp_path / "take.jsonl", camera=CAMERA)


def _listing(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


def _refused(capsys, *argv: str) -> str:
    assert main(["export", *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and "Traceback" not in err, err
    return err


def test_a_refused_export_leaves_nothing_beside_the_take(moving, tmp_path, capsys, monkeypatch):
    flat = _take(tmp_path / "flat.jsonl", camera=CAMERA, with_3d=False)  # 2-D tracks with a camera
    before = _listing(tmp_path)
    out = str(tmp_path / "take")
    assert "no finger bones" in _refused(capsys, str(moving), "--to", "bvh", "--rig", "smpl", "--fingers", "-o", out + ".bvh")
    for fmt in ("bvh", "glb", "trc", "csv"):
        assert "no person with id 99" in _refused(capsys, str(moving), "--to", fmt, "--person", "99", "-o", f"{out}.{fmt}")
    assert "3D keypoints" in _refused(capsys, str(flat), "--to", "glb", "-o", out + ".glb")
    monkeypatch.setenv("PATH", str(tmp_path / "no-blender-here"))
    assert "blender" in _refused(capsys, str(moving), "--to", "fbx", "-o", out + ".fbx").lower()
    assert "Blender is not installed" in _refused(capsys, str(moving), "--to", "blender", "-o", out + ".blend")
    assert _listing(tmp_path) == before


def test_a_failed_sidecar_leaves_neither_it_nor_the_main_file_and_keeps_an_earlier_export(moving, tmp_path, capsys, monkeypatch):
    """The camera CSV is the last file written: its failure (here an error, then Ctrl+C) comes after the
    BVH and its marks are whole, and still nothing moves into place: the earlier export stays as it was."""
    from realtime.export import formats

    out = tmp_path / "take.bvh"
    assert main(["export", str(moving), "--to", "bvh", "-o", str(out)]) == 0
    capsys.readouterr()
    earlier = _listing(tmp_path)
    assert {"take.bvh", "take.bvh.marks.json", "take.camera.csv"} <= set(earlier)
    other = _take(tmp_path / "other.jsonl", camera={**CAMERA, "position": [5.0, 1.5, 3.0]})
    earlier = _listing(tmp_path)
    written = []

    def failing(tracks, target):
        written.extend(p.name for p in tmp_path.iterdir())  # what is there when the last sidecar is written
        raise failure

    monkeypatch.setattr(formats, "write_camera_csv", failing)
    for failure in (OSError(28, "No space left on device"), KeyboardInterrupt()):
        code = main(["export", str(other), "--to", "bvh", "-o", str(out)])
        assert code == (2 if isinstance(failure, OSError) else 130), capsys.readouterr().err
        assert {".take.partial.bvh", ".take.bvh.marks.partial.json"} <= set(written)  # the main file and its marks came first
        assert _listing(tmp_path) == earlier  # no temporary left, the earlier export untouched
        written.clear()


def test_ctrl_c_while_exporting_leaves_nothing(moving, tmp_path):
    """A real SIGINT through the command's own handling, landing while the solved motion is written,
    and while the last sidecar is: exit 130, one line, and no output, sidecar or temporary."""
    before = _listing(tmp_path)
    for target in ("realtime.export.to_bvh.write_bvh", "realtime.export.formats.write_camera_csv"):
        module, name = target.rsplit(".", 1)
        script = (f"import os, signal, sys, time, importlib\n"
                  f"m = importlib.import_module({module!r})\n"
                  f"def interrupted(*args, **kwargs):\n"
                  f"    os.kill(os.getpid(), signal.SIGINT)\n"
                  f"    time.sleep(5)\n"
                  f"m.{name} = interrupted\n"
                  f"import realtime.export.formats\n"
                  f"from realtime.cli import main\n"
                  f"sys.exit(main(sys.argv[1:]))\n")
        done = subprocess.run([sys.executable, "-c", script, "export", str(moving), "--to", "bvh", "-o", str(tmp_path / "t.bvh")],
                              capture_output=True, text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)})
        assert done.returncode == 130 and done.stderr == "interrupted\n", (target, done.returncode, done.stderr)
        assert _listing(tmp_path) == before


@pytest.fixture
def pythons_ctrl_c():
    """Python's own Ctrl+C for the test, the process's handler back after it (a suite started in the background by a
    shell without job control begins with Ctrl+C ignored)."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def test_a_signal_while_the_files_move_into_place_waits_until_the_set_is_whole(tmp_path, monkeypatch, pythons_ctrl_c):
    moves = []
    replace = os.replace

    def interrupted(source, target):
        if not moves:
            os.kill(os.getpid(), signal.SIGINT)  # Python runs the handler at its next instruction: inside the moves
        moves.append(Path(target).name)
        replace(source, target)

    monkeypatch.setattr(staging.os, "replace", interrupted)
    (tmp_path / "take.camera.csv").write_text("an earlier take's camera")
    writes = [(tmp_path / "take.bvh", lambda p: p.write_text("main")),
              (tmp_path / "take.bvh.marks.json", lambda p: p.write_text("{}"))]
    with pytest.raises(KeyboardInterrupt):
        staging.staged_together(writes, stale={tmp_path / "take.camera.csv": "an earlier export wrote it"})
    assert moves == ["take.bvh", "take.bvh.marks.json"]
    assert _listing(tmp_path) == {"take.bvh": b"main", "take.bvh.marks.json": b"{}"}
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # pytest's handler back in place


def test_a_re_export_removes_the_sidecars_it_no_longer_writes(moving, tmp_path, caplog):
    plain = _take(tmp_path / "plain.jsonl")  # the same person, no camera
    for fmt, out in (("bvh", "take.bvh"), ("glb", "take.glb"), ("csv", "take.csv"), ("trc", "take.trc")):
        argv = ["--to", fmt, "-o", str(tmp_path / out)] + (["--person", "1"] if fmt == "trc" else [])
        assert main(["export", str(moving), *argv]) == 0
        assert (tmp_path / "take.camera.csv").is_file()
        caplog.clear()
        assert main(["export", str(plain), *argv]) == 0
        assert not (tmp_path / "take.camera.csv").exists() and (tmp_path / out).is_file()
        said = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
        assert len(said) == 1 and said[0].startswith(f"removed {tmp_path / 'take.camera.csv'} (") and "no camera" in said[0]
    caplog.clear()
    assert main(["export", str(plain), "--to", "bvh", "-o", str(tmp_path / "take.bvh")]) == 0
    assert not [r for r in caplog.records if r.levelname == "WARNING"]  # nothing stale: nothing said


@pytest.mark.parametrize("intrinsics", [[0, 0, 0, 0], [0, 500, 320, 240], [500, -500, 320, 240], [500, None, 320, 240],
                                        [1e-320, 500, 320, 240]])  # beyond float32 (1e300): refused on read, below
def test_intrinsics_that_give_no_lens_are_one_sentence(tmp_path, capsys, intrinsics):
    take = _take(tmp_path / "lens.jsonl", camera={**CAMERA, "intrinsics": intrinsics})
    before = _listing(tmp_path)
    for suffix in (".glb", ".gltf", ".vrma"):
        err = _refused(capsys, str(take), "--to", "vrma" if suffix == ".vrma" else "gltf", "-o", str(tmp_path / f"out{suffix}"))
        assert "lens.jsonl frame 0 has camera intrinsics" in err and "--root camera" in err
    assert _listing(tmp_path) == before
    assert main(["export", str(take), "--to", "gltf", "--root", "camera", "-o", str(tmp_path / "local.gltf")]) == 0
    gltf = json.loads((tmp_path / "local.gltf").read_text(), parse_constant=pytest.fail)  # no NaN / Infinity
    assert "cameras" not in gltf and (tmp_path / "local.camera.csv").is_file()


@pytest.mark.parametrize("camera", [{"position": [1e300, 0.0, 0.0]}, {"intrinsics": [500, 1e300, 320, 240]}])
def test_a_camera_beyond_what_gltf_holds_is_one_sentence(tmp_path, capsys, camera):
    # beyond float32 (what glTF holds) is beyond the tracks record itself: refused as the file is read
    take = _take(tmp_path / "far.jsonl", camera={**CAMERA, **camera})
    before = _listing(tmp_path)
    for fmt in ("glb", "vrma"):
        err = _refused(capsys, str(take), "--to", fmt, "-o", str(tmp_path / f"far.{fmt}"))
        assert "line 2 does not follow the tracks schema (camera's" in err and "beyond the float32 range" in err
    assert _listing(tmp_path) == before


def test_a_world_gltf_with_its_camera_passes_the_khronos_validator(moving, tmp_path):
    """The camera node's lens from the recorded intrinsics, in strict JSON, accepted by the validator
    (tests/test_motion_clients.py installs and runs it; skipped without it, failing under CI=true)."""
    from realtime.export import export_tracks
    from tests.test_motion_clients import ACCEPTED_INFOS, khronos_reports

    paths = [str(export_tracks(moving, fmt, tmp_path / f"take{suffix}")) for fmt, suffix in (("gltf", ".gltf"), ("gltf", ".glb"),
                                                                                           ("vrma", ".vrma"))]
    camera = json.loads(Path(paths[0]).read_text(), parse_constant=pytest.fail)["cameras"][0]["perspective"]
    assert camera["yfov"] == pytest.approx(2 * np.arctan(240 / 500)) and camera["aspectRatio"] == pytest.approx(640 / 480)
    for report in khronos_reports(paths):
        assert report["errors"] == 0 and report["warnings"] == 0, report
        assert {code for code, _, _, _ in report["messages"]} <= ACCEPTED_INFOS, report["messages"]


def test_an_output_that_is_no_file_on_disk_is_one_sentence_and_left_alone(moving, tmp_path, capsys):
    """Standard output, a pipe or a device as -o: the export is moved into place whole, so it would
    replace the pipe (or /dev/stdout's link) instead of feeding it; a folder where a sidecar goes."""
    fifo = tmp_path / "pipe.csv"
    os.mkfifo(fifo)
    for out in ("-", "/dev/stdout", "/dev/null", str(fifo)):
        err = _refused(capsys, str(moving), "--to", "csv", "-o", out)
        assert f"-o {out} is not a file or folder on disk" in err and "take.csv" in err
    assert fifo.is_fifo() and Path("/dev/stdout").is_symlink()
    (tmp_path / "take.camera.csv").mkdir()
    before = _listing(tmp_path)
    err = _refused(capsys, str(moving), "--to", "csv", "-o", str(tmp_path / "take.csv"))
    assert f"{tmp_path / 'take.camera.csv'} is a folder where the export writes a file beside" in err
    assert _listing(tmp_path) == before and (tmp_path / "take.camera.csv").is_dir()
