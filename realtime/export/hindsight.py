"""Foot contacts decided again offline, with the contact model's whole hindsight (`realtime.rig.contact_model`).

A run decides each frame's contacts with the hindsight `--motion-lag` allowed (none by default); a recording can do
better, since every later frame is known. `with_hindsight_contacts` decides them again from what a tracks file holds:
each person's 3D keypoints (`kpts3d`, the ground stage's) put in the world by the world stage's camera, whose world
has the floor at y = 0. Only the frames the run decided (a foot's `contacts` known) on which the camera is known and
grounded are decided again; the others, and files without 3D keypoints or a camera, keep what was recorded.
"""

from __future__ import annotations

import logging

import numpy as np

from realtime.export.tracks import Tracks
from realtime.rig.learned_contacts import hindsight_contacts

log = logging.getLogger(__name__)


def with_hindsight_contacts(tracks: Tracks) -> Tracks:
    """`tracks` with each person's `contacts` decided again with the model's whole hindsight, where the file holds what
    that needs (see the module's docstring)."""
    camera = tracks.camera
    if camera is None or not any(p.contacts is not None and p.keypoints3d is not None for p in tracks.people.values()):
        return tracks
    pose = camera.world_from_camera()  # (T, 4, 4), NaN without a camera
    placed = camera.known & np.asarray(camera.grounded, bool)
    people, changed = {}, 0
    for track_id, person in tracks.people.items():
        if person.contacts is None or person.keypoints3d is None:
            people[track_id] = person
            continue
        known = person.present[:, None] & person.contacts_known
        rows = np.flatnonzero(known.any(axis=1) & placed & np.isfinite(person.keypoints3d).any(axis=(1, 2)))
        times = tracks.times[rows]  # a time not after an earlier one (a source that started over) keeps its record
        rows = rows[times > np.maximum.accumulate(np.concatenate([[-np.inf], times[:-1]]))]
        if len(rows) == 0:
            people[track_id] = person
            continue
        world = np.einsum("tij,tkj->tki", pose[rows, :3, :3], person.keypoints3d[rows]) + pose[rows, None, :3, 3]
        decided = hindsight_contacts(tracks.times[rows], world, tracks.keypoint_names, camera=camera.position[rows])
        contacts = np.array(person.contacts, bool)
        contacts[rows] = decided & known[rows]
        changed += int((contacts != person.contacts).sum())
        people[track_id] = person.replace(contacts=contacts)
    log.info("foot contacts decided again with the contact model's hindsight: %d foot-frames changed", changed)
    return tracks.replace(people=people)
