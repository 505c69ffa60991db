"""A shortened soak (the full one is `python bench/soak.py --frames 10000`): every stage,
tiny models, many frames; threads and file handles come back, memory does not run away."""

import pytest

from bench.soak import soak


@pytest.mark.slow
def test_short_soak_leaves_no_threads_or_handles_and_memory_stays_bounded():
    figures = soak(160)
    assert figures["frames"] == 160 and figures["exit"] == "finished: end of source"
    assert figures["python_threads_after"] == figures["python_threads_before"]
    assert figures["open_fds_after"] <= figures["open_fds_before"]
    # allocator warm-up still settles in a run this short; the full soak holds it to +-50 MB
    assert figures["rss_spread_mb"] < 200
