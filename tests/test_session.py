"""`realtime.Session`: one frame at a time through the stages `sapiens-rt run` uses, with the
same people, ids, keypoints, face and bones as a run over the same clip (tiny fixture models)."""

from __future__ import annotations

import json
import math

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


def _pose_session(models, **options):
    from doubles import whole_frame_boxes
    from realtime import Session

    return Session(tasks="pose", device="cpu", input_size=(64, 48), models={"pose": models["pose"]},
                   box_finder=options.pop("box_finder", whole_frame_boxes), smooth="none", **options)


def test_session_refuses_an_empty_frame_or_a_time_that_is_not_finite_and_goes_on(models):
    from media import gaussian_marker

    image = gaussian_marker(96, 128, 40, 48, 8)
    session = _pose_session(models)
    for empty in (np.zeros((0, 0, 3), np.uint8), np.zeros((0, 10, 3), np.uint8), np.zeros((1, 1, 3), np.uint8)):
        with pytest.raises(UserError, match="holds no picture"):
            session.process(empty, 0.0)
    for bad in (math.inf, -math.inf, math.nan, "soon", None, 1e300, -1e39):  # 1e300: no later time follows it
        with pytest.raises(UserError, match="timestamp"):
            session.process(image, bad)
    assert [session.process(image, t).index for t in (0.0, 0.1)] == [0, 1]  # nothing was poisoned
    with pytest.raises(UserError, match="later time"):
        session.process(image, 0.1)
    assert session.process(image, 1e9).index == 2
    infer = next(stage for stage in session.stages if stage.name == "infer")
    assert infer.predictor.input_hw == (64, 48)  # input_size as a (H, W) tuple
    session.close()
    with pytest.raises(UserError, match="after close"):
        session.process(image, 2e9)


def test_session_writes_the_tracks_and_the_video_a_run_writes(tmp_path, clip, models):
    from doubles import whole_frame_boxes
    from media import read_video
    from realtime.options import ModelOptions, OutputOptions, RunOptions, SmoothingOptions
    from realtime.run import run

    run_tracks = tmp_path / "run.jsonl"
    summary = run(RunOptions(source=str(clip), models=ModelOptions(device="cpu", tasks=("pose",), input_hw=(64, 48)),
                             smoothing=SmoothingOptions(smooth="none"),
                             outputs=OutputOptions(tracks=str(run_tracks), no_video=True, progress=False)),
                  models={"pose": models["pose"]}, box_finder=whole_frame_boxes)
    assert summary.result.exit_code == 0
    tracks, video = tmp_path / "take" / "session.jsonl", tmp_path / "take" / "overlay.mp4"
    with _pose_session(models, tracks=str(tracks), out=str(video)) as session:
        assert len(list(session.stream(str(clip)))) == FRAMES
    assert _frame_lines(tracks) == _frame_lines(run_tracks)
    header = json.loads(tracks.read_text().splitlines()[0])
    assert header["type"] == "header" and header["model"]["input_size"] == [64, 48] and header["fps"] == 10.0
    frames, times, _ = read_video(video)
    assert len(frames) == FRAMES and frames[0].shape == (120, 160, 3)


def test_a_ctrl_c_inside_process_closes_the_outputs_whole(tmp_path, clip, models):
    from doubles import whole_frame_boxes
    from media import read_video

    def boxes(image, index, *rest):
        if index == 3:
            raise KeyboardInterrupt
        return whole_frame_boxes(image, index, *rest)

    tracks, video = tmp_path / "t.jsonl", tmp_path / "o.mp4"
    session = _pose_session(models, tracks=str(tracks), out=str(video), box_finder=boxes)
    with pytest.raises(KeyboardInterrupt):
        list(session.stream(str(clip)))
    assert [json.loads(line)["frame"] for line in _frame_lines(tracks)] == [0, 1, 2]
    assert len(read_video(video)[0]) == 3  # a finished fragmented MP4
    with pytest.raises(UserError, match="after close"):
        session.process(np.zeros((8, 8, 3), np.uint8), 99.0)


def test_session_outputs_are_refused_before_the_take(tmp_path, clip, models):
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    with pytest.raises(UserError, match="Not a directory"):
        _pose_session(models, tracks=str(blocker / "take.jsonl"))
    with pytest.raises(UserError, match="is a folder"):
        _pose_session(models, out=str(tmp_path))
    with pytest.raises(UserError, match="not a file name"):
        _pose_session(models, tracks="")
    with pytest.raises(UserError, match="both name standard output"):
        _pose_session(models, tracks="-", out="/dev/stdout")
    with pytest.raises(UserError, match="does not take view=True"):
        _pose_session(models, view=True)
    session = _pose_session(models, tracks=str(clip))
    with pytest.raises(UserError, match="would overwrite it"):
        next(session.stream(str(clip)))
    session.close()
    assert clip.stat().st_size > 1000  # the input is untouched


@pytest.mark.parametrize("options, words", [
    ({"senders": [5]}, "senders= holds 5, which has no write(frame) and close(); give objects with both, such as "
                       "realtime.stages.live_senders(...) makes."),
    ({"senders": [None]}, "senders= holds None, which has no write(frame) and close()"),
    ({"sinks": ["take.jsonl"]}, "sinks= holds 'take.jsonl', which has no write(frame) and close(); give objects with both."),
    ({"vrchat": "127.0.0.1:9000"}, "Session takes vrchat= through its senders; give "
                                   "senders=realtime.stages.live_senders(vrchat=..., tasks=...)."),
    ({"vmc": ["127.0.0.1:39539"]}, "Session takes vmc= through its senders"),
])
def test_senders_and_sinks_that_cannot_take_a_frame_are_refused_when_made(models, options, words):
    """Not an AttributeError at the first frame (then another from close()); run's sender options point to live_senders."""
    with pytest.raises(UserError) as refused:
        _pose_session(models, **options)
    assert str(refused.value).startswith(words) and "--" not in str(refused.value)


def test_the_sender_options_a_session_points_to_are_live_senders_own():
    import inspect

    from realtime.session import _SENDER_OPTIONS
    from realtime.stages import live_senders

    assert _SENDER_OPTIONS == set(inspect.signature(live_senders).parameters) - {"tasks", "face_calibrate", "caller"}


def test_session_sends_to_its_senders_and_stops_at_max_frames(clip, models):
    import socket

    from realtime.stages import live_senders

    receiver = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    receiver.bind(("127.0.0.1", 0))
    receiver.settimeout(5.0)
    senders = live_senders(osc=f"127.0.0.1:{receiver.getsockname()[1]}", tasks=("pose",))
    with _pose_session(models, senders=senders, max_frames=3) as session:
        frames = list(session.stream(str(clip)))
        assert [f.index for f in frames] == [0, 1, 2]
        with pytest.raises(UserError, match="max_frames=3"):
            session.process(frames[-1].image, 99.0)
    datagrams = []
    receiver.settimeout(0.5)
    try:
        while True:
            datagrams.append(receiver.recv(65536))
    except TimeoutError:
        pass
    receiver.close()
    assert datagrams and all(b"/sapiens/" in d for d in datagrams)


def test_stream_goes_on_through_a_change_of_resolution_as_run_does(tmp_path, models):
    from media import gaussian_marker, write_video
    from realtime.options import ModelOptions, OutputOptions, RunOptions, SmoothingOptions
    from realtime.run import run

    small = write_video(tmp_path / "a.ts", [gaussian_marker(96, 128, 30 + 4 * i, 40, 8) for i in range(5)], fps=10)
    large = write_video(tmp_path / "b.ts", [gaussian_marker(120, 160, 30 + 4 * i, 40, 8) for i in range(5)],
                        times=[0.5 + i / 10 for i in range(5)], fps=10)
    both = tmp_path / "both.ts"
    both.write_bytes(small.read_bytes() + large.read_bytes())  # MPEG-TS: the second part's size takes over mid-way
    session = _pose_session(models)
    sizes = [frame.image.shape[:2] for frame in session.stream(str(both))]
    assert sizes == [(96, 128)] * 5 + [(120, 160)] * 5
    from doubles import whole_frame_boxes

    tracks = tmp_path / "run.jsonl"
    summary = run(RunOptions(source=str(both), models=ModelOptions(device="cpu", tasks=("pose",), input_hw=(64, 48)),
                             smoothing=SmoothingOptions(smooth="none"),
                             outputs=OutputOptions(tracks=str(tracks), no_video=True, progress=False)),
                  models={"pose": models["pose"]}, box_finder=whole_frame_boxes)
    assert summary.result.frames_out == len(sizes) == len(_frame_lines(tracks))


def test_a_session_with_a_motion_lag_streams_every_frame_after_the_lag(clip, models):
    """`motion_lag` (ms): `stream` yields every frame once, in order, each with the people a Session without the lag
    gives (the lag changes contact decisions only); `process`, one frame in and the same frame out, refuses it."""
    from doubles import whole_frame_boxes
    from realtime import Session

    def frames(**lag):
        with Session(tasks=("pose", "depth"), device="cpu", input_size="128x96", pointmap_hw=(256, 128), models=models,
                     box_finder=whole_frame_boxes, **lag) as session:
            return list(session.stream(str(clip)))

    held, plain = frames(motion_lag=150, contacts="learned"), frames(contacts="learned")
    assert [f.index for f in held] == [f.index for f in plain] == list(range(FRAMES))
    for a, b in zip(held, plain):
        assert [p.track_id for p in a.people] == [p.track_id for p in b.people]
        for p, q in zip(a.people, b.people):
            assert (p.keypoints3d is None) == (q.keypoints3d is None)
            assert p.keypoints3d is None or np.array_equal(p.keypoints3d, q.keypoints3d, equal_nan=True)
    with Session(tasks=("pose", "depth"), device="cpu", input_size="128x96", pointmap_hw=(256, 128), models=models,
                 box_finder=whole_frame_boxes, motion_lag=100, contacts="learned") as session:
        with pytest.raises(UserError, match="motion_lag=100.*stream"):
            session.process(np.zeros((120, 160, 3), np.uint8), 0.0)


def test_a_second_clip_through_one_session_is_one_sentence_about_stream(tmp_path, clip, models):
    """Its time starts over: the refusal named process() and a timestamp the caller never gave; the take so far stays."""
    tracks = tmp_path / "take.jsonl"
    with _pose_session(models, tracks=str(tracks)) as session:
        assert len(list(session.stream(str(clip)))) == FRAMES
        with pytest.raises(UserError) as refused:
            next(session.stream(str(clip)))
        assert str(refused.value) == (f"stream() got {clip}, whose first frame is at 0 s, after this Session's frame at 0.7 s; "
                                      "make a new Session for each clip (ids and filters follow one video's time).")
    assert len(_frame_lines(tracks)) == FRAMES
