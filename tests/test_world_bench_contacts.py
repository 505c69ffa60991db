"""bench/world.py's pipeline with the learned contact model (`--contacts learned`): the moving-camera bench runs the
ground stage's other decider, so the rules and the learned model compare on every camera path (bench/RESULTS.md, issue
51, the eleventh stop)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from bench import world

ROOT = Path(__file__).resolve().parents[1]


def test_the_pipeline_decides_contacts_with_the_decider_it_is_given():
    rules = world.pipeline_run("pan", 0, 120)
    learned = world.pipeline_run("pan", 0, 120, contacts="learned")
    assert rules["grounded_from"] is not None and learned["grounded_from"] is not None
    assert rules["grounded_from"] < 120
    measures = ("contact_precision", "contact_recall", "avatar_slide_mm")
    for name in measures:
        assert name in rules and name in learned
    assert any(rules[name] != learned[name] for name in measures)  # another decider, other decisions


@pytest.mark.parametrize("argv", [["--contacts", "learned"], ["--pipeline", "--contacts", "neural"]])
def test_a_contacts_choice_the_bench_cannot_run_is_refused_with_exit_2(argv):
    done = subprocess.run([sys.executable, "bench/world.py", *argv], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert "--contacts" in done.stderr.splitlines()[-1]
