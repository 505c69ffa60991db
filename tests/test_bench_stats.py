"""The interval `bench/models.py --peers` prints around its median per-round ratio."""

import random
import statistics

from bench.models import median_interval


def test_the_interval_is_the_sign_tests_order_statistics():
    values = [0.9 + 0.01 * i for i in range(15)]
    random.Random(0).shuffle(values)
    assert median_interval(values) == (0.9 + 0.03, 0.9 + 0.11)  # the 4th smallest and 4th largest of 15
    assert median_interval([1.0] * 5) is None  # 5 rounds cannot give 95 %
    assert median_interval([1.0, 2.0, 3.0, 4.0, 5.0, 6.0]) == (1.0, 6.0)


def test_it_covers_the_true_median_at_least_95_percent_of_the_time():
    rng = random.Random(1)
    population = [rng.lognormvariate(0, 0.3) for _ in range(20_000)]  # skewed, like per-round ratios
    true_median = statistics.median(population)
    for n in (7, 15, 31):
        hits = 0
        for _ in range(2000):
            low, high = median_interval(rng.sample(population, n))
            hits += low <= true_median <= high
        assert hits / 2000 >= 0.94, (n, hits)
