"""`sapiens-rt batch` on CPU with the fixture models: four small videos (one truncated)
in both engines (local worker processes, and Ray with a local 2-CPU cluster), a worker
killed mid-video by the test-only crash hook (tests/batch_crash.py), and a second run that skips what is done."""

import contextlib
import io
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import batch_crash
from media import gaussian_marker, read_video, write_video
from realtime.batch.plan import find_videos, is_complete, output_names
from realtime.cli import main
from realtime.errors import UserError

ROOT = Path(__file__).resolve().parents[1]
LENGTHS = {"a": 9, "b": 7, "c": 5}


def _model_args(fixtures_dir):
    return ["--tasks", "pose", "--checkpoint", f"pose={fixtures_dir / 'pose_weights.safetensors'}", "--device", "cpu",
            "--boxes-from", "frame", "--input-size", "128x96", "--no-progress"]


def _frame_rows(path: Path) -> list[dict]:
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [r for r in rows if r["type"] == "frame"]


def _manifest(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "batch.jsonl").read_text().splitlines()]


def _cli(*argv) -> tuple[int, str]:
    stdout = io.StringIO()
    with contextlib.redirect_stdout(stdout):
        code = main(list(argv))
    return code, stdout.getvalue()


@pytest.fixture(scope="module")
def videos(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("footage")
    for name, n in LENGTHS.items():
        write_video(folder / f"{name}.mp4", [gaussian_marker(96, 128, 20 + 9 * i, 40 + 3 * i, 8) for i in range(n)], fps=10)
    noise = [np.random.default_rng(i).integers(0, 255, (96, 128, 3), dtype=np.uint8) for i in range(40)]
    full = write_video(tmp_path_factory.mktemp("whole") / "bad.mkv", noise)
    (folder / "bad.mkv").write_bytes(full.read_bytes()[: full.stat().st_size * 6 // 10])  # truncated
    return folder


@pytest.fixture(scope="module")
def single_runs(videos, fixtures_dir, tmp_path_factory) -> dict[str, list[dict]]:
    """Each good video through the single-video `sapiens-rt run`."""
    out = tmp_path_factory.mktemp("single")
    rows = {}
    for name in LENGTHS:
        code, _ = _cli("run", str(videos / f"{name}.mp4"), "--tracks", str(out / f"{name}.jsonl"),
                       "--out", str(out / f"{name}.mp4"), *_model_args(fixtures_dir))
        assert code == 0
        rows[name] = _frame_rows(out / f"{name}.jsonl")
    return rows


@pytest.fixture(scope="module")
def local_ray():
    """A local 2-CPU Ray whose workers run at the test's priority. Ray renices its workers to 15
    (`worker_niceness`), below anything else on the machine, even a neighbour's `nice` job (10):
    on a shared 2-core machine the actors, which load the models and do all of the batch's work,
    then waited minutes for a core (269 s of setup, against 23 s for the local engine's workers).
    The workers find the checkout and tests/ (batch_crash) through the PYTHONPATH Ray starts with,
    so the two workers Ray starts ahead are the actors' (a runtime_env would start two more)."""
    ray = pytest.importorskip("ray")
    with pytest.MonkeyPatch.context() as env:
        env.setenv("PYTHONPATH", os.pathsep.join((str(ROOT), str(ROOT / "tests"))))
        ray.init(num_cpus=2, include_dashboard=False, _system_config={"worker_niceness": 0})
    yield
    ray.shutdown()


@pytest.fixture(scope="module", params=["local", "ray"])
def batch(request, videos, fixtures_dir, tmp_path_factory):
    """Two invocations of the same batch command; the first kills the worker of `a` at frame 3."""
    engine = ["--ray"] if request.param == "ray" else []
    if request.param == "ray":
        request.getfixturevalue("local_ray")
    out = tmp_path_factory.mktemp(f"batch-{request.param}")
    argv = ["batch", str(videos), "--output-dir", str(out), "--workers", "2", "--export", "csv",
            *_model_args(fixtures_dir), *engine]
    with pytest.MonkeyPatch.context() as env:
        batch_crash.install(env)  # the first attempt at `a` dies at frame 3
        first = _cli(*argv)
    manifest_after_first = _manifest(out)
    times = {name: (out / name / "tracks.jsonl").stat().st_mtime_ns for name in LENGTHS}
    second = _cli(*argv)
    return {"out": out, "first": first, "second": second, "manifest": manifest_after_first, "times": times}


def test_each_good_video_equals_its_single_video_run(batch, single_runs):
    code, text = batch["first"]
    assert code == 1 and "3 done, 1 failed" in text  # the truncated video fails the batch, alone
    for name, n in LENGTHS.items():
        folder = batch["out"] / name
        rows = _frame_rows(folder / "tracks.jsonl")
        assert [r["frame"] for r in rows] == list(range(n))
        expected = single_runs[name]
        assert [r["t"] for r in rows] == [r["t"] for r in expected]
        for got, want in zip(rows, expected):
            assert len(got["people"]) == len(want["people"]) == 1
            # same models and frames; worker processes use fewer threads, so allow the last printed digit
            np.testing.assert_allclose(got["people"][0]["kpts"], want["people"][0]["kpts"], atol=0.011)
        assert len(read_video(folder / "overlay.mp4")[0]) == n
        assert len((folder / "tracks.csv").read_text().splitlines()) > n  # the --export format beside it
        assert not (batch["out"] / f"{name}.partial").exists()


def test_the_truncated_video_is_recorded_failed_with_its_reason(batch):
    records = {Path(r["video"]).name: r for r in batch["manifest"]}
    assert set(records) == {"a.mp4", "b.mp4", "c.mp4", "bad.mkv"}
    bad = records["bad.mkv"]
    assert bad["status"] == "failed" and "truncated" in bad["error"]
    assert all(records[f"{n}.mp4"]["status"] == "done" and records[f"{n}.mp4"]["frames"] == LENGTHS[n] for n in LENGTHS)
    assert not (batch["out"] / "bad").exists()  # only complete outputs get the final name
    assert f"failed: {records['bad.mkv']['video']}: stopped early" in batch["first"][1]


def test_a_unit_whose_worker_died_is_retried_and_completes(batch):
    a = next(r for r in batch["manifest"] if r["name"] == "a")
    assert a["status"] == "done" and a["attempt"] == 2 and a["frames"] == LENGTHS["a"]
    assert [r["name"] for r in batch["manifest"]].count("a") == 1  # the dead attempt is not a result


def test_a_second_run_skips_everything_finished(batch):
    code, text = batch["second"]
    assert code == 1 and "3 already done" in text  # the truncated video is tried again, and fails again
    new = _manifest(batch["out"])[len(batch["manifest"]):]
    assert [Path(r["video"]).name for r in new] == ["bad.mkv"]
    assert {n: (batch["out"] / n / "tracks.jsonl").stat().st_mtime_ns for n in LENGTHS} == batch["times"]


def test_inputs_folders_globs_and_equal_stems(tmp_path):
    for sub in ("day1", "day2"):
        (tmp_path / sub).mkdir()
        (tmp_path / sub / "cam.mp4").write_bytes(b"x")
    (tmp_path / "day1" / "notes.txt").write_text("not a video")
    shots = tmp_path / "shots"
    shots.mkdir()
    (shots / "0001.png").write_bytes(b"x")
    videos = find_videos([str(tmp_path / "day1"), str(tmp_path / "day*" / "*.mp4"), str(shots)])
    assert videos == [(tmp_path / "day1" / "cam.mp4").resolve(), (tmp_path / "day2" / "cam.mp4").resolve(), shots.resolve()]
    names = output_names(videos)
    assert len(set(names.values())) == 3 and names[shots.resolve()] == "shots"
    assert all(names[v].startswith("cam-") for v in videos[:2])  # equal stems made unique, stable per path
    assert output_names(videos[1:2]) == {videos[1]: "cam"}  # a lone stem keeps its plain name
    with pytest.raises(UserError, match="matches no file"):
        find_videos([str(tmp_path / "*.mov")])


def test_a_done_record_with_partial_outputs_is_redone(tmp_path):
    folder = tmp_path / "clip"
    folder.mkdir()
    (folder / "tracks.jsonl").write_text('{"type":"header"}\n' + '{"type":"frame"}\n' * 4)
    (folder / "overlay.mp4").write_bytes(b"x")
    record = {"video": "clip.mp4", "status": "done", "frames": 5}
    assert not is_complete(record, folder, ["tracks.jsonl", "overlay.mp4"])  # 4 of 5 rows: redo
    assert is_complete({**record, "frames": 4}, folder, ["tracks.jsonl", "overlay.mp4"])
    assert not is_complete({**record, "frames": 4}, folder, ["tracks.jsonl", "overlay.mp4", "tracks.csv"])
    assert not is_complete({**record, "status": "failed", "frames": 4}, folder, ["tracks.jsonl"])


def test_ray_asked_for_but_not_installed(tmp_path, monkeypatch, capsys, videos, fixtures_dir):
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray fails as when it is not installed
    code = main(["batch", str(videos / "c.mp4"), "--output-dir", str(tmp_path), *_model_args(fixtures_dir), "--ray"])
    err = capsys.readouterr().err
    assert code == 2 and "pip install sapiens-realtime[cluster]" in err and "Traceback" not in err


def test_batch_fills_the_run_groups_as_run_does_and_nothing_else():
    """`batch` reuses `run`'s option groups (models, people, smoothing, source): the same flags
    give the same groups; the run-only groups keep their library defaults (no window, no streaming), and the
    camera and stream options (--width/--height, --timeout, --reconnects) are not offered: a batch reads files."""
    import realtime.cli as cli
    from realtime.options import LiveOutputOptions

    shared = ["--tasks", "pose,depth", "--checkpoint", "pose=p.safetensors", "--dense-every", "3", "--input-size", "256x192",
              "--boxes-from", "frame", "--detect-every", "2", "--max-people", "4", "--smooth", "kalman", "--smoothness", "0.2",
              "--fps", "12", "--max-frames", "9", "--device", "cpu"]
    parser = cli.build_parser()
    ran = cli._run_options(parser.parse_args(["run", "clip.mp4", *shared]))
    batched = cli._batch_run_options(parser.parse_args(["batch", "videos/", "--output-dir", "out", "--no-video", *shared]))
    assert batched.models == ran.models and batched.models.tasks == ("pose", "pointmap") and batched.models.dense_every == 3
    assert batched.people == ran.people and batched.smoothing == ran.smoothing and batched.input == ran.input
    assert batched.people.detect_every == 2 and batched.input.webcam_fps == 12  # read by group
    assert batched.live_outputs == LiveOutputOptions() and batched.input.stills is None
    assert batched.outputs.no_video and batched.outputs.out is None and batched.outputs.tracks is None
    with pytest.raises(SystemExit):
        parser.parse_args(["batch", "videos/", "--output-dir", "out", "--timeout", "4"])


@pytest.fixture(scope="module")
def long_video(tmp_path_factory) -> Path:
    """600 frames (a minute at 10 fps): far from done when the signal comes; only read, so shared."""
    folder = tmp_path_factory.mktemp("long")
    return write_video(folder / "long.mp4", [gaussian_marker(96, 128, 20 + i % 80, 40, 8) for i in range(600)], fps=10)


@pytest.mark.parametrize("signum,code", [(2, 130), (15, 143)])
def test_a_signal_stops_the_batch_with_its_exit_status(tmp_path, fixtures_dir, long_video, signum, code):
    """Ctrl+C (SIGINT, 130) and SIGTERM (143) as `run` has them: the unfinished video is not
    recorded as done nor renamed to its final folder, and there is no traceback."""
    video = long_video
    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-m", "realtime.cli", "batch", str(video), "--output-dir", str(out),
                             "--workers", "1", *_model_args(fixtures_dir)],
                            env={**os.environ, "PYTHONPATH": str(ROOT)},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        tracks = out / "long.partial" / "tracks.jsonl"
        while time.monotonic() < deadline:  # until the video is under way
            assert proc.poll() is None, proc.communicate()
            if tracks.exists() and tracks.read_text().count("\n") > 10:
                break
            time.sleep(0.1)
        proc.send_signal(signum)
        stdout, stderr = proc.communicate(timeout=90)
    finally:
        proc.kill()
    assert proc.returncode == code, (stdout, stderr)
    assert "Traceback" not in stderr and "interrupted" in stdout
    done = [r for r in _manifest(out) if r["status"] == "done"] if (out / "batch.jsonl").exists() else []
    assert not done and not (out / "long").exists()


@pytest.mark.parametrize("argv,address", [
    (["batch", "footage/", "--output-dir", "o", "--ray"], ""),
    (["batch", "footage/", "--output-dir", "o", "--ray", "auto"], "auto"),
    (["batch", "footage/", "--ray", "ray://head:10001", "--output-dir", "o"], "ray://head:10001"),
    (["batch", "footage/", "--ray", "10.0.0.1:6379", "--output-dir", "o"], "10.0.0.1:6379"),
])
def test_ray_addresses(argv, address):
    from realtime.cli import build_parser

    args = build_parser().parse_args(argv)
    assert args.ray == address and args.inputs == ["footage/"]


def test_a_bare_ray_before_the_inputs_does_not_eat_the_first_input(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["batch", "--ray", "footage/", "--output-dir", "o"])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and err.count("\n") == 1
    assert "'footage/' is not a Ray address" in err and "put --ray after the inputs" in err
