"""bench/avatar_chain.py through the stages: every link recorded on the frames a foot is held, the lock's own output
among them (it records what `FootLock.apply` returns, whatever that method is given)."""

from __future__ import annotations

import numpy as np

from bench import avatar_chain, corpus


def test_the_chain_records_every_link_and_the_lock_holds_a_held_ankle_still():
    walk = corpus.load_motion(corpus.PROJECT_FOLDER / "cmu_07_04.bvh", corpus.PROJECT.get("cmu_07_04"))
    walk = corpus.Motion(walk.name, walk.category, walk.joints[: int(2 * walk.fps) + 1], walk.fps)  # 2 s, two steps
    result = avatar_chain.chain(walk, "side", 0, corpus.true_contacts(walk))
    run, links = result["run"], result["links"]
    held = run.decided & run.valid[:, None]
    assert held.sum() > 30
    for name in avatar_chain.LINKS:
        assert np.isfinite(links[name][held]).all(), name
    for side in range(2):
        rows = held[:, side]
        both = rows[1:] & rows[:-1]
        assert both.sum() > 10
        steps = np.linalg.norm(np.diff(links["locked"][:, side, 0][:, [0, 2]], axis=0)[both], axis=-1)
        assert steps.max() < 0.001  # m per frame along the floor: the lock keeps a held ankle where it put it
    lines = avatar_chain.summarise([result])
    assert [line.split()[0] for line in lines[2:7]] == list(avatar_chain.LINKS)
