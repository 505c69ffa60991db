"""The tracks record declared once (`realtime/record.py`): the docs' table is the declaration, each person
key is written in one module, a frame written and read back is the same frame (and the same text), every
declared number field refuses NaN, Infinity, numbers beyond float32 and a null it forbids by name, the
writer leaves out what it cannot write finite, and a new field is one declaration."""

from __future__ import annotations

import ast
import dataclasses
import json
import logging
import math
import sys
import types
from pathlib import Path

import numpy as np
import pytest

from realtime import record
from realtime.expressions import ARKIT_NAMES
from realtime.frames import Frame, Person, rounded_bones, rounded_camera
from realtime.record import FRAME, PERSON, Dims, Group, Null, Numbers, check_frame, frame_text, parse_line
from tests.mocap_synthetic import NAMES, synthetic_clip

REPO = Path(__file__).resolve().parents[1]
K = len(NAMES)
IMAGE = np.zeros((2, 2, 3), np.uint8)


def _bone_names(fingers: bool = False) -> tuple[str, ...]:
    from realtime.rig.bones import bone_table

    return tuple(b.name for b in bone_table(fingers))


def full_frame(index: int = 3) -> Frame:
    """A frame with every field the writer knows, two people (one tentative)."""
    rng = np.random.default_rng(index)
    camera = synthetic_clip(index + 1)[4][index]
    names = _bone_names()
    rotations = rng.normal(size=(len(names), 4))
    bones = rounded_bones(names, rng.normal(size=(len(names), 3)), [0.1, 0.9, -0.2],
                          rotations / np.linalg.norm(rotations, axis=1, keepdims=True), rng.random(len(names)) < 0.2, False)
    xy = (500.0 * camera[:, :2] / camera[:, 2:] + [320.0, 240.0]).astype(np.float32)
    person = Person(box=np.array([10.5, 20.25, 300.0, 400.0], np.float32), box_score=0.875, track_id=4, keypoints=xy,
                    keypoint_scores=np.where(np.isfinite(xy[:, 0]), 0.9, -0.1).astype(np.float32), keypoints_smoothed=xy,
                    predicted=rng.random(K) < 0.1, keypoints3d=camera.astype(np.float32),
                    face=np.round(rng.random(len(ARKIT_NAMES)), 3).astype(np.float32), lips_open=0.25,
                    head_rotation=np.array([0.0, 0.1305, 0.0, 0.9914], np.float32), contacts=np.array([True, False]),
                    bones=bones, height=(1.742, 0.81))
    tentative = Person(box=np.ones(4, np.float32), keypoints=xy + 1, keypoint_scores=np.full(K, 0.5, np.float32))
    pose = np.eye(4)
    pose[:3, 3] = [0.2, 1.5, 3.0]
    return Frame(index=index, timestamp=index / 30.0, image=IMAGE, people=(person, tentative),
                 camera=rounded_camera(pose, np.array([500.0, 501.0, 319.5, 239.5]), "tracking", True, True, 1.0123456),
                 floor_up=np.array([0.0, -1.0, 0.0]))


DIMS = Dims(K, _bone_names())


# -- the declaration is the docs' table, and each person key lives in one module --------------------


def _between(text: str, start: str, end: str) -> str:
    return text[text.index(start) + len(start):text.index(end)].strip()


def test_the_docs_table_and_versions_are_the_declarations():
    doc = (REPO / "docs" / "tracks-format.md").read_text()
    assert _between(doc, "<!-- fields: generated from realtime/record.py (field_table()) -->", "<!-- /fields -->") == \
        record.field_table()
    assert _between(doc, "<!-- versions: generated from realtime/record.py (history_text()) -->", "<!-- /versions -->") == \
        record.history_text()
    assert f"schema version {record.SCHEMA_VERSION})" in doc.splitlines()[0]
    assert max(record.HISTORY) == record.SCHEMA_VERSION
    table = record.field_table()
    for item in PERSON:  # every person field has its row, with its version
        assert f"| `{item.field.key}` | person |" in table


# Where the same word means something else (another format's key, a bone, a stage, a keypoint group).
OTHER_MEANINGS = {
    ("id", "realtime/export/to_coco.py"): "COCO's own keys",
    ("id", "realtime/export/to_csv.py"): "the CSV's column",
    ("height", "realtime/export/to_coco.py"): "COCO's image height",
    ("face", "realtime/sinks/osc.py"): "the face keypoint group of keypoints308.json",
    ("face", "realtime/stages/__init__.py"): "the face stage's name",
    ("face", "realtime/stages/face.py"): "the face stage's name",
    ("head", "realtime/rig/bones.py"): "the VRM head bone",
    ("head", "realtime/rig/retarget.py"): "the VRM head bone",
    ("head", "realtime/sinks/osc.py"): "the VRM head bone",
    ("head", "realtime/sinks/vrchat.py"): "the VRM head bone and VRChat's head tracker",
    ("head", "realtime/export/curves.py"): "the curves sidecar's key",
    ("contacts", "realtime/export/curves.py"): "the curves sidecar's key",
    ("contacts", "realtime/build.py"): "the run option contacts= (rules or learned)",
}


def string_literals(root: Path) -> dict[str, set[str]]:
    """String constant -> the modules of realtime/ (Blender scripts aside) that hold it, docstrings left out."""
    found: dict[str, set[str]] = {}
    for path in sorted((root / "realtime").rglob("*.py")):
        if "blender_scripts" in path.parts:
            continue
        tree = ast.parse(path.read_text())
        docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                      if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body
                      and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
                found.setdefault(node.value, set()).add(path.relative_to(root).as_posix())
    return found


def test_each_person_key_is_a_string_literal_in_one_module_only():
    literals = string_literals(REPO)
    keys = [item.field.key for item in PERSON]
    assert {"kpts3d", "predicted", "smoothed", "lips", "kpts", "bones"} <= set(keys)
    for key in keys:
        modules = {m for m in literals.get(key, set()) if (key, m) not in OTHER_MEANINGS}
        assert modules == {"realtime/record.py"}, (key, modules)


def test_the_one_module_check_can_fail(tmp_path):
    (tmp_path / "realtime" / "export").mkdir(parents=True)
    (tmp_path / "realtime" / "record.py").write_text('KEY = "kpts3d"\n')
    (tmp_path / "realtime" / "export" / "x.py").write_text('"""Docs may say "kpts3d"."""\nvalue = person["kpts3d"]\n')
    assert string_literals(tmp_path)["kpts3d"] == {"realtime/record.py", "realtime/export/x.py"}


# -- a round trip ---------------------------------------------------------------------------------------


def test_a_frame_written_and_read_back_is_the_same_frame_and_the_same_text():
    frame = full_frame()
    text = frame_text(frame, DIMS)
    checked = check_frame(parse_line(text), DIMS)
    again = record.frame_from_record(checked, IMAGE)
    assert frame_text(again, DIMS) == text  # what a replay writes (or sends) is what the run wrote
    assert (again.index, again.timestamp) == (frame.index, pytest.approx(frame.timestamp, abs=1e-6))
    np.testing.assert_array_equal(again.floor_up, frame.floor_up)
    for name in ("position", "rotation", "intrinsics"):
        np.testing.assert_array_equal(getattr(again.camera, name), getattr(frame.camera, name))
    assert (again.camera.status, again.camera.world, again.camera.grounded, again.camera.pointmap_scale) == \
        (frame.camera.status, frame.camera.world, frame.camera.grounded, frame.camera.pointmap_scale)
    person, read = frame.people[0], again.people[0]
    assert read.track_id == 4 and read.box_score == pytest.approx(0.875) and again.people[1].track_id is None
    np.testing.assert_allclose(read.box, person.box, atol=0.005)
    np.testing.assert_allclose(read.keypoints, person.keypoints, atol=0.005)
    np.testing.assert_allclose(read.keypoints3d, person.keypoints3d, atol=5e-5)
    np.testing.assert_array_equal(read.predicted, person.predicted)
    np.testing.assert_allclose(read.face, person.face, atol=1e-7)
    np.testing.assert_array_equal(read.head_rotation, person.head_rotation)
    np.testing.assert_array_equal(read.contacts, person.contacts)
    assert read.lips_open == person.lips_open and read.height == person.height
    for name in ("offsets", "root_position", "rotations", "held"):  # Bones hold the file's decimals: equal
        np.testing.assert_array_equal(getattr(read.bones, name), getattr(person.bones, name))
    assert read.bones.names == person.bones.names and read.bones.root_held == person.bones.root_held


def test_a_file_written_and_read_back_gives_each_declared_track_array(tmp_path):
    from realtime.export.jsonl import read_tracks
    from realtime.sinks.tracks import TrackWriter

    path = tmp_path / "take.jsonl"
    with TrackWriter(path, keypoint_names=NAMES, image_wh=(640, 480), fps=30.0, source="s", model={}, tracked=True,
                     bone_names=DIMS.bones) as writer:
        for index in range(3):
            writer.write(full_frame(index))
    tracks = read_tracks(path)
    track = tracks.people[4]
    assert {f.name for f in dataclasses.fields(track)} == {"id", "present"} | {a.name for a in record.TRACK_ARRAYS}
    assert track.lips.tolist() == [0.25] * 3 and track.stature == (1.742, 0.81)
    assert track.contacts.tolist() == [[True, False]] * 3 and track.contacts_known.all()
    np.testing.assert_allclose(track.face[2], full_frame(2).people[0].face, atol=1e-7)


# -- hostile values, for every declared number field ------------------------------------------------------


def _number_fields():
    """(where, field): every declared Numbers field, with the path to it in a frame line."""
    out = []
    for item in FRAME:
        if isinstance(item, Numbers):
            out.append(((item.key,), item))
        if isinstance(item, Group):
            out += [((item.key, part.key), part) for part in item.parts if isinstance(part, Numbers)]
    for item in PERSON:
        if isinstance(item.field, Numbers):
            out.append((("people", 0, item.field.key), item.field))
        if isinstance(item.field, Group):
            out += [(("people", 0, item.field.key, part.key), part) for part in item.field.parts if isinstance(part, Numbers)]
    return out


NUMBER_FIELDS = _number_fields()


def _name(where: tuple) -> str:
    if where[0] == "people":
        return "person 1's " + "".join(f"{key}' " if key.endswith("s") and i < len(where) - 3 else
                                       f"{key}'s " if i < len(where) - 3 else key for i, key in enumerate(where[2:]))
    return "'s ".join(where)


def _put(line: dict, where: tuple, value) -> None:
    target = line
    for key in where[:-1]:
        target = target[key]
    target[where[-1]] = value


def _first_number_path(value) -> list:
    """The index path to the first number in a nested list (a scalar: [])."""
    return [] if not isinstance(value, list) else [0, *_first_number_path(value[0])]


def _hostile(where: tuple, token: str) -> str:
    """A written frame line with the first number of the field at `where` replaced by `token` (a JSON text)."""
    line = json.loads(frame_text(full_frame(), DIMS))
    target = line
    for key in where:
        target = target[key]
    inner = _first_number_path(target)
    if not inner:
        _put(line, where, "@@")
    else:
        holder = target
        for i in inner[:-1]:
            holder = holder[i]
        holder[inner[-1]] = "@@"
    return json.dumps(line).replace('"@@"', token)


@pytest.mark.parametrize("where", [w for w, _ in NUMBER_FIELDS], ids=["/".join(map(str, w)) for w, _ in NUMBER_FIELDS])
@pytest.mark.parametrize("token, words", [("NaN", "holds NaN, not a finite number"),
                                          ("-Infinity", "holds -Infinity, not a finite number"),
                                          ("1e999", "holds inf, not a finite number"),
                                          ("1e300", "beyond the float32 range"),
                                          ('"12.5"', "12.5")])
def test_every_number_field_refuses_non_finite_huge_and_text_by_name(where, token, words):
    field = dict(NUMBER_FIELDS)[where]
    with pytest.raises(ValueError) as refused:
        check_frame(parse_line(_hostile(where, token)), DIMS)
    message = str(refused.value)
    assert _name(where) in message and (words in message or field.expect in message), message


@pytest.mark.parametrize("where", [w for w, f in NUMBER_FIELDS if not f.null.numbers and f.shape],
                         ids=["/".join(map(str, w)) for w, f in NUMBER_FIELDS if not f.null.numbers and f.shape])
def test_a_null_number_is_refused_where_the_field_forbids_it(where):
    with pytest.raises(ValueError, match="null") as refused:
        check_frame(parse_line(_hostile(where, "null")), DIMS)
    assert _name(where) in str(refused.value)


@pytest.mark.parametrize("where", [w for w, f in NUMBER_FIELDS if not f.null.whole],
                         ids=["/".join(map(str, w)) for w, f in NUMBER_FIELDS if not f.null.whole])
def test_a_null_field_is_refused_where_the_field_is_never_null(where):
    line = json.loads(frame_text(full_frame(), DIMS))
    _put(line, where, None)
    with pytest.raises(ValueError, match="is null; it never may be") as refused:
        check_frame(line, DIMS)
    assert _name(where) in str(refused.value)


def test_unknown_fields_are_ignored_unless_they_hold_a_nan():
    line = json.loads(frame_text(full_frame(), DIMS))
    line["people"][0]["gaze"] = {"left": [0, 0, 1]}
    line["future"] = [1, 2]
    check_frame(parse_line(json.dumps(line)), DIMS)
    text = json.dumps(line).replace("[0, 0, 1]", "[0, NaN, 1]")
    with pytest.raises(ValueError, match="person 1's gaze's left holds NaN"):
        check_frame(parse_line(text), DIMS)


@pytest.mark.parametrize("header, words", [
    ({"bone_names": 5}, "header's bone_names is 5, not a list of names"),
    ({"bone_names": [1, 1]}, "not a list of names"),
    ({"bone_names": ["hips", "hips"]}, "names 'hips' twice"),
    ({"fps": math.inf}, "fps"),
    ({"model": {"scale": math.nan}}, "header's model's scale holds nan"),
    ({"version": 6}, "version 6"),
    ({"keypoint_names": []}, "not a list of names"),
])
def test_a_header_is_checked_field_by_field(header, words):
    good = record.new_header(keypoint_names=NAMES, image_wh=(640, 480), fps=30.0, source="s", model={}, software={},
                             tracked=True, bone_names=DIMS.bones)
    record.check_header(good)
    with pytest.raises(ValueError, match=words.replace("(", r"\(")):
        record.check_header({**good, **header})


# -- the writer writes nothing non-finite -----------------------------------------------------------------


def test_the_writer_leaves_out_a_field_it_cannot_write_finite_and_says_so_once(caplog):
    frame = full_frame()
    person = frame.people[0]
    rotations = person.bones.rotations.copy()
    rotations[3] = np.nan
    bad = dataclasses.replace(person.bones, rotations=rotations)
    huge = person.replace(bones=bad, height=(1e300, 0.5), keypoints3d=np.where(np.arange(K)[:, None] == 2, np.inf,
                                                                                 person.keypoints3d))
    with caplog.at_level(logging.WARNING, logger="realtime.record"):
        record._said.clear()
        text = frame_text(frame.replace(people=(huge,)), DIMS)
        frame_text(frame.replace(people=(huge,)), DIMS)
    line = check_frame(parse_line(text), DIMS)  # what the writer writes, the reader reads
    assert "NaN" not in text and "nan" not in text and "inf" not in text.lower()
    assert line.people[0].bones is None and line.people[0].height is None  # never null: left out
    known = np.isfinite(person.keypoints3d).all(axis=1)
    assert np.isnan(line.people[0].kpts3d[2]).all()  # a number may be null: only the infinite ones are
    np.testing.assert_allclose(line.people[0].kpts3d[3:][known[3:]], person.keypoints3d[3:][known[3:]], atol=5e-5)
    said = [r.getMessage() for r in caplog.records]
    assert len(said) == 2 and any("bones" in s for s in said) and any("height" in s for s in said)


# -- a new field is one declaration ---------------------------------------------------------------------------


def test_a_new_person_field_is_one_declaration(tmp_path):
    """record.py with one more PersonField (and its line of HISTORY): the writer writes it, the reader checks and
    reads it (refusing a NaN in it by name), PersonTrack gets its array and the docs' table its row."""
    source = (REPO / "realtime" / "record.py").read_text()
    declaration = ('    PersonField(Numbers("gaze", "where the eyes look, a unit vector in camera axes", since=6, shape=(3,), '
                   'decimals=4, unit_vector=True), get=lambda p: None if p.track_id is None else np.array([0.0, 0.6, 0.8]), '
                   'put=lambda v: {}),\n)\n\nFRAME = (')
    assert source.count(")\n\nFRAME = (") == 1
    source = source.replace(")\n\nFRAME = (", declaration, 1)
    source = source.replace("SCHEMA_VERSION = 5", "SCHEMA_VERSION = 6").replace(
        "HISTORY = {\n", 'HISTORY = {\n    6: "gaze",\n', 1)
    module = types.ModuleType("record_with_gaze")
    module.__dict__["__name__"] = "record_with_gaze"
    sys.modules["record_with_gaze"] = module
    try:
        exec(compile(source, "record_with_gaze", "exec"), module.__dict__)
        text = module.frame_text(full_frame(), DIMS)
        line = json.loads(text)
        assert line["people"][0]["gaze"] == [0.0, 0.6, 0.8] and "gaze" not in line["people"][1]
        assert module.check_frame(module.parse_line(text), DIMS).people[0].gaze.tolist() == [0.0, 0.6, 0.8]
        with pytest.raises(ValueError, match="person 1's gaze holds NaN"):
            module.check_frame(module.parse_line(text.replace("[0.0000,0.6000,0.8000]", "[NaN,0.6,0.8]")), DIMS)
        assert "gaze" in [f[0] for f in module.person_track_fields()]
        assert "| `gaze` | person | 3 numbers |" in module.field_table() and "- version 6: gaze" in module.history_text()
        arrays = module.person_track_arrays([(0, module.check_frame(module.parse_line(text), DIMS).people[0])], 2, DIMS)
        assert arrays["gaze"][0].tolist() == [0.0, 0.6, 0.8] and np.isnan(arrays["gaze"][1]).all()
    finally:
        del sys.modules["record_with_gaze"]


def test_the_null_rules_are_what_the_docs_say():
    assert Null.NEVER.whole is False and Null.NEVER.numbers is False
    assert Null.ANY.whole and Null.ANY.numbers and Null.NUMBERS.numbers and not Null.NUMBERS.whole
    never = {(item.field.key, part.key) for item in PERSON if isinstance(item.field, Group) for part in item.field.parts
             if part.null is Null.NEVER}
    assert {("bones", "rot"), ("bones", "root"), ("bones", "offsets")} <= never
    camera = next(f for f in FRAME if f.key == "camera")
    assert {p.key for p in camera.parts if p.null is Null.NEVER} >= {"position", "rotation"}
