"""`realtime.Session`: one frame at a time through the stages `sapiens-rt run` uses, with the
same people, ids, keypoints, face and bones as a run over the same clip (tiny fixture models)."""

from __future__ import annotations

import numpy as np
import pytest

from realtime.errors import UserError
from realtime.options import ModelOptions, OutputOptions

FRAMES = 8


@pytest.fixture(scope="module")
def clip(tmp_path_factory):
    from media import gaussian_marker, write_video

    folder = tmp_path_factory.mktemp("clip")
    return write_video(folder / "clip.mp4", [gaussian_marker(120, 160, 50 + 6 * i, 60, 12) for i in range(FRAMES)], fps=10)


@pytest.fixture(scope="module")
def models(fixtures_dir):
    from realtime.models import load_model

    return {task: load_model(task, fixtures_dir / f"{task}_weights.safetensors") for task in ("pose", "pointmap")}


def _frame_lines(path):
    return [line for line in path.read_text().splitlines() if '"type":"frame"' in line]


def test_session_process_gives_what_a_run_gives(tmp_path, clip, models):
    from doubles import whole_frame_boxes
    from realtime import Session
    from realtime.data import keypoint_names
    from realtime.run import RunOptions, run
    from realtime.sinks.tracks import TrackWriter
    from realtime.sources import open_source

    run_tracks = tmp_path / "run.jsonl"
    summary = run(RunOptions(source=str(clip), models=ModelOptions(device="cpu", input_hw=(128, 96), pointmap_hw=(256, 128)),
                             outputs=OutputOptions(tracks=str(run_tracks), no_video=True, progress=False)),
                  models=models, box_finder=whole_frame_boxes)
    assert summary.result.exit_code == 0, summary.result.message

    session_tracks = tmp_path / "session.jsonl"
    source = open_source(str(clip))
    info = source.open()
    with Session(tasks=("pose", "depth"), device="cpu", input_size="128x96", pointmap_hw=(256, 128), models=models,
                 box_finder=whole_frame_boxes) as session, \
            TrackWriter(session_tracks, keypoint_names=keypoint_names(), image_wh=(info.width, info.height), fps=10.0,
                        source="x", model={}, tracked=True) as writer:
        frames = [session.process(image, t) for t, image in source.frames()]
        for frame in frames:
            writer.write(frame)
    source.close()
    assert [type(s).__name__ for s in session.stages] == []  # closed
    people = [p for f in frames for p in f.people if p.track_id is not None]
    assert people and all(p.bones is not None and p.keypoints3d is not None for p in people)
    assert _frame_lines(session_tracks) == _frame_lines(run_tracks)  # ids, keypoints, 3D, face, contacts, bones


def test_session_stream_and_its_checks(tmp_path, clip, models):
    from doubles import whole_frame_boxes
    from realtime import Session

    session = Session(tasks="pose", device="cpu", input_size="128x96", models={"pose": models["pose"]},
                      box_finder=whole_frame_boxes, smooth="none")
    frames = list(session.stream(str(clip), max_frames=3))
    assert [f.index for f in frames] == [0, 1, 2]
    assert all(p.keypoints.shape == (308, 2) for f in frames for p in f.people)
    with pytest.raises(UserError, match="later time"):
        session.process(frames[-1].image, frames[-1].timestamp)  # not after the last frame
    with pytest.raises(UserError, match="uint8 RGB"):
        session.process(np.zeros((10, 10), np.uint8), 5.0)
    other_size = session.process(np.zeros((64, 80, 3), np.uint8), 5.0)  # a size change goes on, as in a run
    assert other_size.index == 3 and other_size.image.shape == (64, 80, 3)
    session.close()
    with pytest.raises(UserError, match="unknown option 'flip'"):
        Session(tasks="pose", models={"pose": models["pose"]}, box_finder=whole_frame_boxes, flip=True)


def test_session_errors_name_python_arguments(tmp_path, monkeypatch):
    from realtime import Session
    from realtime.models import hub

    with pytest.raises(UserError, match=r'checkpoints=\{"pose": \.\.\.\}') as error:
        Session(tasks="pose", checkpoints={"pose": tmp_path / "missing.safetensors"})
    assert "--checkpoint" not in str(error.value)
    monkeypatch.setattr(hub, "hub_reachable", lambda: False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    with pytest.raises(UserError, match='boxes_from="seg" or "frame"') as error:
        Session(tasks="pose", checkpoints={"pose": __file__})
    assert "--" not in str(error.value).split("run `")[0]
