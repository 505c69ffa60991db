"""Every option a user can get wrong, and `export` / `smooth` given a bad file or output:
one `error:` line, exit status 2, no traceback, nothing left behind."""

import json

import pytest

from export_synthetic import write_synthetic
from media import numbered_frames, write_video
from realtime.cli import main

BAD_OPTIONS = [
    (["--max-frames", "0"], "--max-frames"),
    (["--max-frames", "-3"], "--max-frames"),
    (["--max-frames", "ten"], "--max-frames"),
    (["--fps", "0"], "--fps"),
    (["--fps", "-25"], "--fps"),
    (["--fps", "nan"], "--fps"),
    (["--fps", "inf"], "--fps"),
    (["--timeout", "-1"], "--timeout"),
    (["--timeout", "0"], "--timeout"),
    (["--timeout", "nan"], "--timeout"),
    (["--smoothness", "inf"], "--smoothness"),
    (["--smoothness", "1.5"], "--smoothness"),
    (["--motion-lag", "-5"], "--motion-lag"),
    (["--motion-lag", "nan"], "--motion-lag"),
    (["--motion-lag", "1e400"], "--motion-lag"),
    (["--motion-lag", "fast"], "--motion-lag"),
    (["--reconnects", "-1"], "--reconnects"),
    (["--detect-every", "0"], "--detect-every"),
    (["--max-people", "0"], "--max-people"),
    (["--width", "-640"], "--width"),
    (["--size", "3b"], "--size"),
    (["--no-such-option"], "unrecognized arguments"),
]


@pytest.mark.parametrize("args,expected", BAD_OPTIONS, ids=[" ".join(a) for a, _ in BAD_OPTIONS])
def test_a_bad_option_is_one_error_line(args, expected, tmp_path, capsys):
    src = write_video(tmp_path / "v.mp4", numbered_frames(2))
    with pytest.raises(SystemExit) as exit_:
        main(["run", str(src), "--output-dir", str(tmp_path / "rec"), *args])
    err = capsys.readouterr().err
    assert exit_.value.code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and expected in lines[0] and lines[0].endswith("."), err
    assert not (tmp_path / "rec").exists()


def _one_error_line(capsys, code) -> str:
    err = capsys.readouterr().err.strip()
    assert code == 2 and err.startswith("error: ") and len(err.splitlines()) == 1 and "Traceback" not in err, err
    return err


def _corrupt(path, change):
    lines = path.read_text().splitlines()
    record = json.loads(lines[2])
    change(record)
    lines[2] = json.dumps(record)
    path.write_text("\n".join(lines) + "\n")
    return path


WRONG_SCHEMA = {
    "keypoints as strings": lambda r: r["people"][0].update(kpts=[["a", "b", "c"]] * len(r["people"][0]["kpts"])),
    "keypoints not a list": lambda r: r["people"][0].update(kpts="none"),
    "a box of strings": lambda r: r["people"][0].update(box=["1", "2", "3", "4", "0.9"]),
    "an id that is text": lambda r: r["people"][0].update(id="seven"),
    "a frame number that is text": lambda r: r.update(frame="3"),
    "a time that is text": lambda r: r.update(t="0.1 s"),
    "people not a list": lambda r: r.update(people={"0": 1}),
}


@pytest.mark.parametrize("case", list(WRONG_SCHEMA))
@pytest.mark.parametrize("command", ["export", "smooth"])
def test_a_tracks_file_of_the_wrong_schema_is_one_sentence(case, command, tmp_path, capsys):
    tracks = _corrupt(write_synthetic(tmp_path / "walk.jsonl"), WRONG_SCHEMA[case])
    args = ["--to", "csv"] if command == "export" else ["--method", "rts", "-o", str(tmp_path / "s.jsonl")]
    err = _one_error_line(capsys, main([command, str(tracks), *args]))
    assert "line 3 does not follow the tracks schema" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["walk.jsonl"]  # nothing written, no .partial


def test_a_header_of_the_wrong_schema_is_one_sentence(tmp_path, capsys):
    tracks = write_synthetic(tmp_path / "walk.jsonl")
    lines = tracks.read_text().splitlines()
    header = json.loads(lines[0])
    header["image_size"] = "1920x1080"
    tracks.write_text("\n".join([json.dumps(header)] + lines[1:]) + "\n")
    assert "image_size" in _one_error_line(capsys, main(["export", str(tracks), "--to", "npz"]))


@pytest.mark.parametrize("command", ["export", "smooth"])
@pytest.mark.parametrize("where", ["a folder", "an unwritable folder", "a file below a file"])
def test_an_output_that_cannot_be_written_is_one_sentence_without_debris(command, where, tmp_path, capsys):
    tracks = write_synthetic(tmp_path / "walk.jsonl")
    target = tmp_path / "out"
    target.mkdir()
    if where == "a folder":
        out = target
    elif where == "an unwritable folder":
        out = "/proc/walk.out"
    else:
        out = tracks / "walk.out"
    args = ["--to", "csv", "-o", str(out)] if command == "export" else ["--method", "rts", "-o", str(out)]
    err = _one_error_line(capsys, main([command, str(tracks), *args]))
    assert "is a folder" in err if where == "a folder" else "Cannot write" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "walk.jsonl"] and not list(target.iterdir())


def test_openpose_into_a_file_is_one_sentence(tmp_path, capsys):
    tracks = write_synthetic(tmp_path / "walk.jsonl")
    (tmp_path / "x.json").write_text("{}")
    err = _one_error_line(capsys, main(["export", str(tracks), "--to", "openpose", "-o", str(tmp_path / "x.json")]))
    assert "writes a folder" in err
