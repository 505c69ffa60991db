"""The three doors to one pipeline (`sapiens-rt run`, `sapiens-rt batch`, `realtime.Session`) build
through one builder (`realtime.build.Builder`), so each refuses the same option values before
anything is opened, loaded or written: exit 2 and one sentence from the CLI naming its flag, one
`UserError` from Python naming the argument as the caller wrote it."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
import torch

from media import gaussian_marker, write_video
from realtime.errors import UserError

ROOT = Path(__file__).resolve().parents[1]

# (Session's keyword arguments, the CLI's words, what the Python error says, what the CLI error says)
HOSTILE = [
    ({"dense_every": 0}, ["--dense-every", "0"], "dense_every=0", "--dense-every 0"),
    ({"dense_every": -2}, ["--dense-every", "-2"], "dense_every=-2", "--dense-every -2"),
    ({"dense_every": 2.5}, ["--dense-every", "2.5"], "dense_every=2.5", "--dense-every 2.5"),
    ({"face_calibrate": -1}, ["--face-calibrate", "-1"], "face_calibrate=-1", "--face-calibrate"),
    ({"face_calibrate": float("nan")}, ["--face-calibrate", "nan"], "face_calibrate=nan", "--face-calibrate"),
    ({"face_calibrate": float("inf")}, ["--face-calibrate", "inf"], "face_calibrate=inf", "--face-calibrate"),
    ({"device": "gpu"}, ["--device", "gpu"], "device='gpu'", "--device gpu"),
    ({"device": "mps"}, ["--device", "mps"], "device='mps'", "--device mps"),
    ({"device": ""}, ["--device", ""], "device=''", "--device"),
    ({"detect_every": 0}, ["--detect-every", "0"], "detect_every=0", "--detect-every"),
    ({"max_people": 0}, ["--max-people", "0"], "max_people=0", "--max-people"),
    ({"max_frames": 0}, ["--max-frames", "0"], "max_frames=0", "--max-frames"),
    ({"smoothness": 2.0}, ["--smoothness", "2"], "smoothness=2.0", "--smoothness"),
    ({"motion_lag": -1}, ["--motion-lag", "-1"], "motion_lag=-1", "--motion-lag"),
    ({"motion_lag": float("nan")}, ["--motion-lag", "nan"], "motion_lag=nan", "--motion-lag"),
    ({"motion_lag": float("inf")}, ["--motion-lag", "inf"], "motion_lag=inf", "--motion-lag"),
    ({"motion_lag": 1e9}, ["--motion-lag", "1e9"], "motion_lag=1000000000.0", "--motion-lag"),
    ({"motion_lag": "100"}, ["--motion-lag", "100ms"], "motion_lag='100'", "--motion-lag"),
    ({"smooth": "median"}, ["--smooth", "median"], "smooth='median'", "--smooth"),
    ({"contacts": "neural"}, ["--contacts", "neural"], "contacts='neural'", "--contacts"),
    ({"contacts": ["learned"]}, ["--contacts", "LEARNED"], "contacts=['learned']", "--contacts"),
    ({"motion_lag": 100}, ["--motion-lag", "100"], "motion_lag=100 lets the learned contact model see ahead",
     "--motion-lag 100.0 lets the learned contact model see ahead"),  # rules decide by default: no hindsight to give
    ({"dtype": "fp64"}, ["--dtype", "fp64"], "dtype='fp64'", "--dtype"),
    ({"input_size": (20, 20)}, ["--input-size", "20x20"], "input_size=(20, 20)", "--input-size 20x20"),
    ({"input_size": (10**9, 768)}, ["--input-size", f"{10**9}x768"], "input_size=(1000000000, 768)", "--input-size"),
    ({"input_size": "big"}, ["--input-size", "big"], "input_size='big'", "--input-size big"),
    ({"camera": "moving"}, ["--camera", "moving"], "camera='moving'", "--camera moving"),  # pose alone: no depth
    ({"boxes_from": "seg"}, ["--boxes-from", "seg"], "boxes_from='seg'", "--boxes-from seg"),  # pose alone: no seg
]
if not torch.cuda.is_available():
    HOSTILE.append(({"device": "cuda"}, ["--device", "cuda"], "device='cuda'", "--device cuda"))
IDS = [" ".join(cli) for _, cli, _, _ in HOSTILE]


@pytest.fixture(scope="module")
def clip(tmp_path_factory):
    folder = tmp_path_factory.mktemp("clip")
    return write_video(folder / "clip.mp4", [gaussian_marker(96, 128, 30 + 8 * i, 48, 8) for i in range(3)], fps=10)


@pytest.mark.parametrize("door", ["run", "batch", "Session"])
@pytest.mark.parametrize(("python", "cli", "python_words", "cli_words"), HOSTILE, ids=IDS)
def test_every_door_refuses_the_same_options_in_its_own_words(tmp_path, capsys, clip, fixtures_dir, door, python, cli,
                                                              python_words, cli_words):
    pose = str(fixtures_dir / "pose_weights.safetensors")
    out = tmp_path / "out"
    if door == "Session":
        from realtime import Session

        with pytest.raises(UserError) as refused:
            Session(tasks="pose", checkpoints={"pose": pose}, boxes_from=python.pop("boxes_from", "frame"), **python)
        message = str(refused.value)
        assert python_words in message and "--" not in message, message
    else:
        from realtime.cli import main

        where = ["--output-dir", str(out)] if door == "batch" else ["--output-dir", str(out), "--tracks", str(out / "t.jsonl")]
        boxes = [] if "--boxes-from" in cli else ["--boxes-from", "frame"]
        try:
            code = main([door, str(clip), "--tasks", "pose", "--checkpoint", f"pose={pose}", *boxes, *where, *cli])
        except SystemExit as stop:  # argparse's own refusals (a value its type rejects) leave this way
            code = stop.code
        message = capsys.readouterr().err.strip()
        assert code == 2 and message.startswith("error: ") and "\n" not in message, message
        assert cli_words in message and "Traceback" not in message, message
        assert python_words not in message  # the flag, not the Python name
    assert message.endswith("."), message  # one sentence
    assert not out.exists()  # refused before anything was made


def test_session_and_batch_build_through_the_public_builder_only():
    """No module outside run.py imports a private helper of run.py; the doors import the builder."""
    private = []
    for path in (ROOT / "realtime").rglob("*.py"):
        if path.name == "run.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module == "realtime.run":
                private += [f"{path.name}: {a.name}" for a in node.names if a.name.startswith("_")]
            if isinstance(node, ast.Attribute) and node.attr.startswith("_") and isinstance(node.value, ast.Name) \
                    and node.value.id in ("run_module", "run"):
                private.append(f"{path.name}: {node.value.id}.{node.attr}")
    assert private == []
    for door in ("session.py", "batch/worker.py", "run.py"):
        assert "from realtime.build import Builder" in (ROOT / "realtime" / door).read_text() or \
            "import Builder" in (ROOT / "realtime" / door).read_text(), door


def test_the_builder_checks_and_builds_for_a_python_user(fixtures_dir):
    from realtime.build import Builder
    from realtime.mode import RunMode
    from realtime.options import ModelOptions, PeopleOptions, RunOptions

    files = {"pose": "pose", "depth": "pointmap"}
    checkpoints = {task: str(fixtures_dir / f"{file}_weights.safetensors") for task, file in files.items()}
    options = RunOptions(source="clip.mp4", models=ModelOptions(tasks=("depth", "pose"), device="CPU", input_hw=(128, 96),
                                                                checkpoints=checkpoints),
                         people=PeopleOptions(boxes_from="frame"))
    builder = Builder(options)
    assert builder.device == "cpu" and builder.options.models.tasks == ("pointmap", "pose")  # canonical names
    models = builder.load_models()
    stages = builder.analysis_stages(models, builder.box_finder(RunMode.FILE), RunMode.FILE, (96, 128), 10.0)
    assert [s.name for s in stages][:2] == ["detect", "infer"] and stages[-1].name == "motion"


def _help(capsys, monkeypatch, command: str) -> str:
    from realtime.cli import main

    monkeypatch.setenv("COLUMNS", "2000")  # one line per option: no path broken at a hyphen
    with pytest.raises(SystemExit):
        main([command, "--help"])
    return " ".join(capsys.readouterr().out.split())  # argparse's wrapping undone


def test_run_help_states_its_defaults_and_where_the_tracks_format_is(capsys, monkeypatch):
    text = _help(capsys, monkeypatch, "run")
    for shown in ("or the whole frame (default: detector)", "keep the N most confident people (default: everyone)",
                  "webcam capture width (default: the camera's own)", "webcam capture height (default: the camera's own)",
                  "(docs/tracks-format.md)", "--device DEVICE cuda, cuda:1 or cpu, in any case"):
        assert shown in text, shown
    assert "(see README)" not in text


def test_batch_help_lists_no_camera_or_stream_options(capsys, monkeypatch):
    text = _help(capsys, monkeypatch, "batch")
    for absent in ("--width", "--height", "--timeout", "--reconnects", "webcam"):
        assert absent not in text, absent
    for present in ("--fps", "--max-frames", "--camera", "--dense-every", "--boxes-from"):
        assert present in text, present


def test_device_names_are_taken_in_any_case(tmp_path, capsys, clip, fixtures_dir):
    """`--device CPU` is `cpu` (documented in --help and docs/pipeline-options.md)."""
    import json

    from realtime.cli import main

    tracks = tmp_path / "t.jsonl"
    code = main(["run", str(clip), "--tasks", "pose", "--checkpoint", f"pose={fixtures_dir / 'pose_weights.safetensors'}",
                 "--boxes-from", "frame", "--device", "CPU", "--no-video", "--no-progress", "--tracks", str(tracks)])
    assert code == 0, capsys.readouterr().err
    assert json.loads(tracks.read_text().splitlines()[0])["model"]["device"] == "cpu"


def test_batch_from_python_names_the_python_option(tmp_path, clip):
    from realtime.batch import BatchOptions, run_batch
    from realtime.options import ModelOptions, RunOptions

    options = BatchOptions(inputs=[str(clip)], output_dir=str(tmp_path / "out"),
                           run=RunOptions(source="", models=ModelOptions(tasks=("pose",), dense_every=0)))
    with pytest.raises(UserError, match=r"^dense_every=0 is not a whole number of 1 or more; give e\.g\. dense_every=3\.$"):
        run_batch(options)
    assert not (tmp_path / "out").exists()
