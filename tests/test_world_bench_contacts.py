"""The contact decider a run is given (`--contacts`) decides the feet in the world too: once the camera is seen to move,
the world stage decides each foot's contact in the world frame (`realtime.stages.world.WorldStage`), with the rules or
the learned model as the ground stage does; and bench/world.py's pipeline runs either (`--contacts`), so the two
compare on every camera path (bench/RESULTS.md, issue 51, the eleventh stop)."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from bench import world
from realtime.rig.contact_model import default_model
from realtime.stages import EgomotionStage, GroundStage, WorldStage
from tests.world_tracks import NAMES, scene_frames

ROOT = Path(__file__).resolve().parents[1]


def _world_contacts(stage: WorldStage, frames: int = 120) -> list[np.ndarray]:
    """Each person's contacts on the pan path's frames in the world, as `stage` decides them."""
    stages = [EgomotionStage(camera="auto"), GroundStage(NAMES), stage]
    out = []
    for _, frame in scene_frames("pan", frames, 0, None):
        for s in stages:
            frame = s.process(frame)
        if frame.camera is not None and frame.camera.world:
            out += [np.asarray(p.contacts) for p in frame.people if p.contacts is not None]
    return out


def test_the_world_stage_decides_with_the_learned_model_it_is_given():
    # a model that calls every foot planted: its read-out's bias far over the hysteresis, its weights nothing
    base = default_model()
    planted = dataclasses.replace(base, w3=np.zeros_like(base.w3), b3=50.0)
    learned = _world_contacts(WorldStage(NAMES, contacts="learned", contact_model=planted))
    rules = _world_contacts(WorldStage(NAMES))
    assert len(learned) >= 40 and len(rules) == len(learned)  # the camera moved: people in the world
    # the model's word, not the rules', once the world's decider has seen one step of the feet's motion: it plants
    # nothing on its first frame (both walkers), with no motion seen (`LearnedContacts.update`)
    assert not np.any(learned[:2]) and np.all(learned[2:])
    assert not np.all(rules)  # the rules see the walkers lift their feet


@pytest.mark.parametrize("contacts", ["neural", "", None, 1])
def test_a_world_stage_refuses_a_decider_it_does_not_have(contacts):
    with pytest.raises(ValueError, match="contacts"):
        WorldStage(NAMES, contacts=contacts)


def test_the_bench_pipeline_decides_contacts_with_the_decider_it_is_given():
    rules = world.pipeline_run("pan", 0, 120)
    learned = world.pipeline_run("pan", 0, 120, contacts="learned")
    assert rules["grounded_from"] is not None and rules["grounded_from"] < 120
    measures = ("contact_precision", "contact_recall", "avatar_slide_mm")
    assert any(rules[name] != learned[name] for name in measures)  # another decider, other decisions


@pytest.mark.parametrize("argv", [["--contacts", "learned"], ["--pipeline", "--contacts", "neural"]])
def test_a_contacts_choice_the_bench_cannot_run_is_refused_with_exit_2(argv):
    done = subprocess.run([sys.executable, "bench/world.py", *argv], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert "--contacts" in done.stderr.splitlines()[-1]
