"""The rig's gate objects (realtime/rig/gates.py): every gate in seconds, metres or metres per second, documented,
checked on creation and overridable by the caller; and no gate in realtime/rig counted in frames."""

from __future__ import annotations

import ast
import dataclasses
import importlib
import math
from pathlib import Path

import numpy as np
import pytest

from realtime.rig.contacts import ContactDetector, ContactGates
from realtime.rig.floor import Floor, FloorGates, fit_floor
from realtime.rig.gates import UNITS, Gates
from realtime.rig.lift import LiftGates
from realtime.rig.lock import FootLock, LockGates, PinGates
from tests.mocap_synthetic import NAMES

RIG = Path(__file__).resolve().parents[1] / "realtime" / "rig"
GATE_OBJECTS = (ContactGates, FloorGates, LiftGates, LockGates, PinGates)
# the gates issue 51 found counted in frames or doing nothing, and the per-frame distances (gone: now s and m/s)
FRAME_GATES = {"STANCE_FRAMES", "OFF_FRAMES", "EASE_FRAMES", "RELEASE_HOLD", "HOLD_AFTER", "SWING_FRAMES", "SWING_STEP",
               "DRIFT_WEIGHT", "LANDING_AHEAD", "STILL", "STILL_FRAMES", "STILL_STEP_PX"}


def _module_names(path: Path) -> set[str]:
    """The names a module assigns at its top level."""
    names = set()
    for node in ast.parse(path.read_text()).body:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        for target in targets:
            for leaf in ast.walk(target):
                if isinstance(leaf, ast.Name):
                    names.add(leaf.id)
    return names


def test_no_gate_in_the_rig_is_counted_in_frames():
    modules = sorted(RIG.glob("*.py"))
    assert len(modules) > 10
    for path in modules:
        names = _module_names(path)
        assert not names & FRAME_GATES, (path.name, names & FRAME_GATES)
        counted = {n for n in names if n.endswith("_FRAMES") or "STEP" in n or "PER_FRAME" in n}
        assert not counted, (path.name, counted)
        assert "frames in a row" not in path.read_text(), path.name  # a run of frames is judged by its time


def test_every_gate_object_of_the_rig_is_known_here():
    for path in RIG.glob("*.py"):
        importlib.import_module(f"realtime.rig.{path.stem}")
    found = set()
    stack = list(Gates.__subclasses__())
    while stack:
        cls = stack.pop()
        found.add(cls)
        stack += cls.__subclasses__()
    assert found == set(GATE_OBJECTS)


@pytest.mark.parametrize("gates", GATE_OBJECTS)
def test_every_gate_has_a_unit_a_reason_and_a_positive_default(gates):
    described = gates.describe()
    assert described and len(described) == len(dataclasses.fields(gates))
    for name, default, unit, why in described:
        assert unit in UNITS, (name, unit)
        assert len(why) > 20, name
        assert isinstance(default, float) and math.isfinite(default) and default > 0, (name, default)
    assert gates.__doc__ and "(" in gates.__doc__


@pytest.mark.parametrize("gates", GATE_OBJECTS)
@pytest.mark.parametrize("value", [0.0, -0.1, float("nan"), float("inf"), "0.3", None, True])
def test_a_gate_refuses_what_is_not_a_positive_number(gates, value):
    name, _, unit, _ = gates.describe()[0]
    with pytest.raises(ValueError) as error:
        gates(**{name: value})
    message = str(error.value)
    assert f"{gates.__name__}.{name}" in message and unit in message and repr(value) in message


def test_contact_gates_keep_their_hysteresis():
    with pytest.raises(ValueError, match="on_height .* must be below off_height"):
        ContactGates(on_height=0.12)
    with pytest.raises(ValueError, match="walking .* must be below running"):
        ContactGates(walking=2.5)
    with pytest.raises(TypeError):
        ContactGates(on_heigth=0.05)  # a misspelt gate is not taken silently
    assert ContactGates(on_height=0.1).off_height == ContactGates().off_height  # one gate moved, the rest kept


def _still_heel(height: float, gates: ContactGates) -> list[bool]:
    detector = ContactDetector(Floor(np.array([0.0, -1.0, 0.0]), np.zeros(3)), NAMES, gates=gates)
    heel = NAMES.index("left_heel")
    states = []
    for i in range(6):
        points = np.full((len(NAMES), 3), np.nan)
        points[heel] = [0.0, -height, 4.0]
        states.append(bool(detector.update(i / 30, points)[0]))
    return states


def test_a_caller_moves_a_gate():
    """A still heel 10 cm up: off the floor with the default onset height, on it with a looser one."""
    assert not any(_still_heel(0.10, ContactGates()))
    assert all(_still_heel(0.10, ContactGates(on_height=0.12, off_height=0.15))[1:])


def test_the_floor_gates_move_the_fit():
    """Feet along a line 6 cm across (RMS): too narrow to fix the tilt across it by default (the body's up), wide
    enough with a smaller min_spread."""
    rng = np.random.default_rng(0)
    along, across = rng.uniform(-1, 1, 200), rng.choice([-0.06, 0.06], 200)
    feet = np.stack([across, 0.03 * across + rng.normal(0, 0.002, 200), along + 4.0], axis=1)  # tilted 1.7 deg across
    body_up = np.array([0.0, -1.0, 0.0])
    assert abs(fit_floor(feet, body_up).normal[0]) < 1e-4  # the body's up across the line
    assert abs(fit_floor(feet, body_up, gates=FloorGates(min_spread=0.05)).normal[0]) > 0.01  # the feet's own tilt


def test_the_lock_and_the_detector_refuse_a_time_that_is_not_a_number():
    body = np.zeros((len(NAMES), 3))
    with pytest.raises(ValueError, match="finite timestamp"):
        FootLock(NAMES).apply(float("nan"), body, np.array([True, False]))
    with pytest.raises(ValueError, match="finite timestamp"):
        ContactDetector(Floor(np.array([0.0, -1.0, 0.0]), np.zeros(3)), NAMES).update(float("inf"), body)


def test_a_source_that_starts_over_starts_the_detector_over():
    """Time going back (a file played again): the last take's contact and history are not carried into it."""
    detector = ContactDetector(Floor(np.array([0.0, -1.0, 0.0]), np.zeros(3)), NAMES)
    heel = NAMES.index("left_heel")
    points = np.full((len(NAMES), 3), np.nan)
    points[heel] = [0.0, 0.0, 4.0]
    assert [bool(detector.update(t / 30, points)[0]) for t in range(4)] == [False, True, True, True]
    assert not detector.update(0.0, points)[0]  # its first frame again: no speed yet, no contact
