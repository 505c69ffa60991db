"""When normal/depth run: every N frames, or adaptively within the source's frame budget."""

from realtime.stages import DenseSchedule


def _drive(schedule: DenseSchedule, frames: int, base: float, full: float) -> list[int]:
    ran = []
    for i in range(frames):
        due = schedule.due(i)
        schedule.record(i, full if due else base, due)
        if due:
            ran.append(i)
    return ran


def test_fixed_interval():
    assert _drive(DenseSchedule(every=3, fps=30), 10, 0.01, 0.05) == [0, 3, 6, 9]
    assert _drive(DenseSchedule(every=1, fps=30), 4, 0.01, 0.05) == [0, 1, 2, 3]


def test_adaptive_interval_fits_the_frame_budget():
    # 50 fps source: 20 ms per frame; 10 ms without the dense tasks, 40 ms with them:
    # every 3rd frame keeps the average at (40 + 2 * 10) / 3 = 20 ms
    # (frame 0 measures the cost with them, frame 1 without)
    assert _drive(DenseSchedule(every=None, fps=50), 30, base=0.010, full=0.040) == list(range(0, 30, 3))
    # plenty of headroom: every frame once both costs are known
    assert _drive(DenseSchedule(every=None, fps=10), 12, base=0.010, full=0.040) == [0] + list(range(2, 12))
    # no headroom at all: the maps still refresh every MAX_GAP frames
    slow = _drive(DenseSchedule(every=None, fps=30), 100, base=0.050, full=0.100)
    assert all(b - a == DenseSchedule.MAX_GAP for a, b in zip(slow[1:], slow[2:]))
