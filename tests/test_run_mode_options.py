"""The run mode decided once from the source and options; option groups; the one export-format table."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import cv2
import numpy as np
import pytest

from media import numbered_frames, write_video
from realtime.errors import UserError
from realtime.mode import RunMode, decide_mode, mode_of
from realtime.options import ModelOptions, PeopleOptions, RunOptions
from realtime.sources import ImageFolderSource, SourceInfo, VideoSource

ROOT = Path(__file__).resolve().parent.parent


def _folder(tmp_path: Path, sizes) -> Path:
    folder = tmp_path / "photos"
    folder.mkdir()
    for i, (h, w) in enumerate(sizes):
        cv2.imwrite(str(folder / f"{i}.png"), np.full((h, w, 3), 40 * i, np.uint8))
    return folder


def _decide(source, **options) -> RunMode:
    info = source.open()
    try:
        return decide_mode(source, info, stills=options.get("stills"), boxes_from=options.get("boxes_from", "detector"))
    finally:
        source.close()


def test_the_mode_comes_from_the_source_and_the_stills_option(tmp_path):
    video = write_video(tmp_path / "v.mp4", numbered_frames(2), fps=10)
    mixed = _folder(tmp_path, [(40, 60), (50, 30)])
    assert _decide(VideoSource(str(video), live=False)) is RunMode.FILE
    assert _decide(ImageFolderSource(str(mixed))) is RunMode.STILLS  # photos of different sizes: unrelated
    assert _decide(ImageFolderSource(str(mixed)), stills=False) is RunMode.FILE  # --no-stills: a sequence
    assert mode_of(SourceInfo(name="cam", uri="0", live=True, width=64, height=48, fps=30.0, frame_count=None)) is RunMode.LIVE
    with pytest.raises(UserError, match="--stills is for a folder or glob of photos"):
        _decide(VideoSource(str(video), live=False), stills=True)
    with pytest.raises(UserError, match="pass --no-stills for a sequence"):
        _decide(ImageFolderSource(str(mixed)), boxes_from="seg")


def test_what_each_mode_does():
    assert [m for m in RunMode if m.drops_stale] == [RunMode.LIVE]  # only live sources drop at the gate
    assert [m for m in RunMode if not m.follows_people] == [RunMode.STILLS]  # no tracker, filter, or boxes carried over
    assert [m for m in RunMode if m.shows_progress] == [RunMode.FILE, RunMode.STILLS]
    assert [m for m in RunMode if m.adaptive_dense] == [RunMode.LIVE]


def test_run_options_are_read_and_changed_by_group_only():
    grouped = RunOptions(source="a.mp4", models=ModelOptions(tasks=("pose",)), people=PeopleOptions(detect_every=3))
    assert grouped.people.detect_every == 3 and grouped.outputs.no_video is False
    changed = grouped.change(models={"device": "cpu"}, live_outputs={"view": True})  # as the batch worker does
    assert changed.models == ModelOptions(tasks=("pose",), device="cpu") and changed.live_outputs.view
    assert grouped.live_outputs.view is False and changed.people is grouped.people  # the original is untouched
    with pytest.raises(TypeError):
        RunOptions(source="a.mp4", detect_every=3)  # no flat names
    with pytest.raises(AttributeError):
        grouped.detect_every  # noqa: B018 (reading it is what raises)
    with pytest.raises(AttributeError):
        grouped.max_in_flight = 1  # frozen: a copy is made with change()
    with pytest.raises(TypeError, match="no option group 'peeple'"):
        grouped.change(peeple={"detect_every": 1})
    # the Python door (Session) puts each name in its group; an unknown name is refused
    assert RunOptions.from_names("a.mp4", {"tasks": ("pose",), "detect_every": 3}) == grouped
    with pytest.raises(TypeError, match="unknown option 'detect_evry'"):
        RunOptions.from_names("a.mp4", {"detect_evry": 3})


def test_one_format_table_for_the_cli_batch_and_export():
    from realtime.cli import build_parser
    from realtime.export.formats import default_output
    from realtime.export.table import ALIASES, BATCH_FORMATS, FORMATS

    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command").choices
    to = next(a for a in sub["export"]._actions if a.dest == "to")
    export = next(a for a in sub["batch"]._actions if a.dest == "export")
    assert tuple(to.choices) == tuple(FORMATS) + tuple(ALIASES)  # glb: the name everyone types for binary glTF
    assert tuple(export.choices) == BATCH_FORMATS == ("csv", "npz", "openpose", "coco")
    assert default_output("a/run.jsonl", "gltf") == Path("a/run.glb")
    assert default_output("run.jsonl", "openpose") == Path("run_openpose")
    assert all(FORMATS[name].title in parser.format_help() for name in FORMATS)  # `export`'s one-line help names them all


def test_building_the_parser_imports_no_exporter_or_numpy():
    code = "import sys; from realtime.cli import build_parser; build_parser(); " \
           "print(sorted(m for m in sys.modules if m == 'numpy' or m.startswith('realtime.export.to_')))"
    out = subprocess.run([sys.executable, "-c", code], env={**os.environ, "PYTHONPATH": str(ROOT)},
                         capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.strip() == "[]", out.stderr


def test_gpu_switches_reach_the_run_options():
    from realtime.cli import _run_options, build_parser

    args = build_parser().parse_args(["run", "a.mp4", "--cuda-graphs", "--crop-sampling", "bilinear"])
    options = _run_options(args)
    assert options.models.cuda_graphs and options.models.crop_sampling == "bilinear"
    assert _run_options(build_parser().parse_args(["run", "a.mp4"])).models.crop_sampling == "official"
    with pytest.raises(SystemExit):
        build_parser().parse_args(["run", "a.mp4", "--crop-sampling", "nearest"])
