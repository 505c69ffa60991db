"""Offline work decides foot contacts again with the contact model's whole hindsight (realtime/export/hindsight.py):
a synthetic take (tests/world_tracks.py: two walkers in a room, egomotion -> ground -> world -> motion, a tracks file
of it) read back, its contacts against the walkers' true ones; `export` and `smooth` use them by default and keep the
run's with `--recorded-contacts`."""

from __future__ import annotations

import csv

import numpy as np
import pytest

from bench.motion import contact_counts
from realtime.cli import main
from realtime.export.hindsight import with_hindsight_contacts
from realtime.export.jsonl import read_tracks
from tests.world_tracks import run_chain, write_tracks


@pytest.fixture(scope="module")
def take(tmp_path_factory):
    """(the scene's truth, a tracks file of 240 frames, static camera: the floor known from about frame 150)."""
    truth, frames, stages = run_chain("static", 240)
    return truth, write_tracks(frames, stages[-1].bone_names, tmp_path_factory.mktemp("take") / "take.jsonl")


def _scores(contacts, truth, times, known) -> tuple[float, float]:
    tp, fp, fn = contact_counts(contacts, truth, times, known)
    return tp / max(tp + fp, 1), tp / max(tp + fn, 1)


def test_hindsight_decides_the_recorded_frames_again_and_no_worse(take):
    truth, path = take
    recorded = read_tracks(path)
    again = with_hindsight_contacts(recorded)
    changed = 0
    for track_id, person in recorded.people.items():
        other = again.people[track_id]
        known = person.present & person.contacts_known.any(axis=1)
        assert known.sum() >= 60  # the frames the run decided
        assert not other.contacts[~known].any()  # nothing decided where the run decided nothing
        assert np.array_equal(other.contacts_known, person.contacts_known)
        changed += int((other.contacts != person.contacts).sum())
        live = _scores(person.contacts, truth.contacts[track_id - 1], recorded.times, known)
        offline = _scores(other.contacts, truth.contacts[track_id - 1], recorded.times, known)
        # measured: live P 0.99 / 0.97, R 0.99 / 0.98; offline P 1.00, R 1.00 / 0.99
        assert offline[0] >= live[0] - 0.01 and offline[1] >= live[1] - 0.01
        assert min(offline) >= 0.95
    assert changed > 0  # the hindsight decided some frames otherwise


def _csv_contacts(path) -> list[list[str]]:
    """Each row's contact cells (p1_contact_left, p1_contact_right, p2_...)."""
    with open(path, newline="") as handle:
        rows = list(csv.DictReader(handle))
    columns = [c for c in rows[0] if "_contact_" in c]
    assert len(columns) == 4
    return [[row[c] for c in columns] for row in rows]


def test_export_and_smooth_use_hindsight_unless_told_to_keep_the_recorded_contacts(take, tmp_path, capsys):
    _, path = take
    assert main(["export", str(path), "--to", "csv", "-o", str(tmp_path / "hindsight.csv")]) == 0
    assert main(["export", str(path), "--to", "csv", "--recorded-contacts", "-o", str(tmp_path / "recorded.csv")]) == 0
    hindsight, recorded = _csv_contacts(tmp_path / "hindsight.csv"), _csv_contacts(tmp_path / "recorded.csv")
    assert len(hindsight) == len(recorded) and hindsight != recorded
    assert [[c == "" for c in row] for row in hindsight] == [[c == "" for c in row] for row in recorded]  # unknown stays so

    expected = with_hindsight_contacts(read_tracks(path))
    assert main(["smooth", str(path), "-o", str(tmp_path / "smooth.jsonl")]) == 0
    assert main(["smooth", str(path), "--recorded-contacts", "-o", str(tmp_path / "kept.jsonl")]) == 0
    smoothed, kept, original = (read_tracks(tmp_path / "smooth.jsonl"), read_tracks(tmp_path / "kept.jsonl"),
                                read_tracks(path))
    for track_id, person in original.people.items():
        assert np.array_equal(smoothed.people[track_id].contacts, expected.people[track_id].contacts)
        assert np.array_equal(kept.people[track_id].contacts, person.contacts)
        assert np.array_equal(smoothed.people[track_id].contacts_known, person.contacts_known)
    capsys.readouterr()
