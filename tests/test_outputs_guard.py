"""Outputs never overwrite inputs or each other (however the path is spelled), and two
runs writing the same output at once: the second is refused, the first is untouched."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from media import gaussian_marker, numbered_frames, read_video, write_video
from realtime.cli import main

ROOT = Path(__file__).resolve().parents[1]


def _setup(p: Path) -> Path:
    return write_video(p / "v.mp4", numbered_frames(3))


CASES = {
    "--out is the source": (lambda p: ["--out", str(p / "v.mp4")], "is the input"),
    "--out is the source, spelled another way": (lambda p: ["--out", str(p / "sub" / ".." / "v.mp4")], "is the input"),
    "--tracks is the source": (lambda p: ["--tracks", str(p / "v.mp4")], "is the input"),
    "--out is a symlink to the source": (
        lambda p: os.symlink(p / "v.mp4", p / "link.mp4") or ["--out", str(p / "link.mp4")], "is the input"),
    "--tracks is a hard link to the source": (
        lambda p: os.link(p / "v.mp4", p / "hard.jsonl") or ["--tracks", str(p / "hard.jsonl")], "is the input"),
    "--out and --tracks are one file": (
        lambda p: ["--out", str(p / "o.mp4"), "--tracks", str(p / "o.mp4")], "name the same file"),
    "--out and --tracks are one file via a symlink": (
        lambda p: os.symlink(p / "o.mp4", p / "o.jsonl") or ["--out", str(p / "o.mp4"), "--tracks", str(p / "o.jsonl")],
        "name the same file"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_an_output_that_would_overwrite_an_input_is_refused(case, tmp_path, capsys, monkeypatch):
    (tmp_path / "sub").mkdir()
    source = _setup(tmp_path)
    before = source.read_bytes()
    make, expected = CASES[case]
    extra = make(tmp_path)
    monkeypatch.chdir(tmp_path)
    code = main(["run", str(source), "--device", "cpu", "--no-progress", "--output-dir", str(tmp_path / "rec"), *extra])
    err = capsys.readouterr().err.strip()
    assert code == 2 and err.startswith("error: ") and expected in err and len(err.splitlines()) == 1, err
    assert source.read_bytes() == before
    assert not (tmp_path / "rec").exists() and not (tmp_path / "o.mp4").exists()


def test_an_image_of_the_source_folder_as_output_is_refused(tmp_path, capsys):
    import cv2

    folder = tmp_path / "shots"
    folder.mkdir()
    cv2.imwrite(str(folder / "a.png"), gaussian_marker(48, 64, 30, 20, 4))
    before = (folder / "a.png").read_bytes()
    code = main(["run", str(folder), "--device", "cpu", "--no-progress", "--no-video", "--tracks", str(folder / "a.png")])
    assert code == 2 and "is the input" in capsys.readouterr().err
    assert (folder / "a.png").read_bytes() == before


@pytest.mark.slow
def test_a_second_run_writing_the_same_outputs_is_refused(tmp_path, capsys, fixtures_dir):
    frames = [gaussian_marker(96, 128, 20 + (i % 90), 50, 6) for i in range(150)]
    src = write_video(tmp_path / "walk.mp4", frames, fps=10)
    out, tracks = tmp_path / "out.mp4", tmp_path / "tracks.jsonl"
    common = ["--tasks", "pose", "--input-size", "64x48", "--device", "cpu", "--no-progress", "--boxes-from", "frame",
              "--checkpoint", f"pose={fixtures_dir / 'pose_weights.safetensors'}"]
    first = subprocess.Popen([sys.executable, "-m", "realtime.cli", "run", str(src), "--out", str(out), "--tracks",
                              str(tracks), *common],
                             env={**os.environ, "PYTHONPATH": str(ROOT)},
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 120
    while time.time() < deadline and first.poll() is None:
        if tracks.exists() and len(tracks.read_text().splitlines()) > 3:
            break
        time.sleep(0.02)
    assert first.poll() is None, first.communicate()[1]

    # the same tracks file, another video; then the same video, other tracks
    for extra in (["--out", str(tmp_path / "other.mp4"), "--tracks", str(tracks)],
                  ["--out", str(out), "--tracks", str(tmp_path / "other.jsonl")]):
        code = main(["run", str(src), *extra, *common])
        err = capsys.readouterr().err.strip()
        assert code == 2 and "being written by another sapiens-rt run" in err and len(err.splitlines()) == 1, err
    assert not (tmp_path / "other.mp4").exists() and not (tmp_path / "other.jsonl").exists()

    stdout, stderr = first.communicate(timeout=300)
    assert first.returncode == 0, stderr
    rows = [json.loads(line) for line in tracks.read_text().splitlines()[1:]]
    assert [r["frame"] for r in rows] == list(range(150))  # the first run's file is intact
    video, _, _ = read_video(out)
    assert len(video) == 150


@pytest.mark.parametrize("option", ["--tracks", "--out"])
def test_an_output_that_would_overwrite_a_checkpoint_is_refused(option, tmp_path, capsys, fixtures_dir):
    """The weights are inputs too: --tracks naming the checkpoint truncated it under the loaded model (a bus error)."""
    import shutil

    source = _setup(tmp_path)
    weights = shutil.copy(fixtures_dir / "pose_weights.safetensors", tmp_path / "pose.safetensors")
    before = Path(weights).read_bytes()
    code = main(["run", str(source), "--tasks", "pose", "--checkpoint", f"pose={weights}", "--boxes-from", "frame",
                 "--device", "cpu", "--no-progress", "--output-dir", str(tmp_path / "rec"), option, str(weights)])
    err = capsys.readouterr().err.strip()
    assert code == 2 and err == f"error: {option} {weights} is the input {weights} itself and would overwrite it; choose " \
                                "another output path.", err
    assert Path(weights).read_bytes() == before and not (tmp_path / "rec").exists()


def test_a_session_names_its_outputs_in_python_and_never_overwrites_its_weights(tmp_path, fixtures_dir):
    import shutil

    from realtime import Session
    from realtime.errors import UserError

    weights = shutil.copy(fixtures_dir / "pose_weights.safetensors", tmp_path / "pose.safetensors")
    before = Path(weights).read_bytes()
    common = dict(tasks="pose", checkpoints={"pose": weights}, boxes_from="frame", device="cpu")
    with pytest.raises(UserError) as refused:
        Session(**common, tracks=weights)
    assert str(refused.value) == f"the tracks= file {weights} is the input {weights} itself and would overwrite it; " \
                                 "choose another output path."
    with pytest.raises(UserError) as refused:
        Session(**common, out=str(tmp_path / "o.mp4"), tracks=str(tmp_path / "o.mp4"))
    assert str(refused.value).startswith("the tracks= file and the out= file name the same file")
    assert Path(weights).read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == ["pose.safetensors"]


@pytest.mark.parametrize("argv, words", [
    (["run", "{v}", "--no-video", "--tracks", "{p}/takes/"],
     "--tracks {p}/takes/ ends in /, a folder; give a file name inside it, such as --tracks {p}/takes/take.jsonl."),
    (["run", "{v}", "--out", "{p}/takes/", "--no-progress"], "--out {p}/takes/ ends in /, a folder"),
    (["export", "{t}", "--to", "csv", "-o", "{p}/takes/"], "-o {p}/takes/ ends in /, a folder; give a file name inside it, such "
                                                          "as {p}/takes/take.csv."),
    (["smooth", "{t}", "-o", "{p}/takes/"], "-o {p}/takes/ ends in /, a folder"),
])
def test_an_output_file_named_as_a_folder_is_refused(argv, words, tmp_path, capsys):
    """`--tracks takes/` wrote a file named takes: the slash is the user's word for a folder."""
    from tests.test_export_sidecars import _take

    names = {"v": str(_setup(tmp_path)), "t": str(_take(tmp_path / "t.jsonl")), "p": str(tmp_path)}
    code = main([a.format(**names) for a in argv] + (["--device", "cpu"] if argv[0] == "run" else []))
    err = capsys.readouterr().err.strip()
    assert code == 2 and err.startswith("error: " + words.format(**names)) and len(err.splitlines()) == 1, err
    assert not (tmp_path / "takes").exists()


def test_a_session_output_named_as_a_folder_is_refused(tmp_path, fixtures_dir):
    from realtime import Session
    from realtime.errors import UserError

    with pytest.raises(UserError) as refused:
        Session(tasks="pose", checkpoints={"pose": str(fixtures_dir / "pose_weights.safetensors")}, boxes_from="frame",
                device="cpu", tracks=f"{tmp_path}/takes/")
    assert str(refused.value) == f"tracks='{tmp_path}/takes/' ends in /, a folder; give a file name inside it, such as " \
                                 f"tracks='{tmp_path}/takes/take.jsonl'."
    assert not (tmp_path / "takes").exists()
