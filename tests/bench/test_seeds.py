"""Seeds derived from the run's secret (bench/seeds.py)."""

import pytest

from flashinfer_bench.bench.seeds import SeedStream, stable_seed


def test_a_stream_gives_the_seeds_stable_seed_gives():
    secret = 0x1234_5678_9ABC_DEF0_1234_5678_9ABC_DEF0
    stream = SeedStream(secret, "scale_add", "w64", "timed", 2)
    for rest in ((0,), (17,), ("pick", 17), ("pick", 3, "x")):
        assert stream.seed(*rest) == stable_seed(secret, "scale_add", "w64", "timed", 2, *rest)
    assert stream.seed(1) != stream.seed(10) and stream.seed(1) != SeedStream(secret + 1, "scale_add", "w64",
                                                                                "timed", 2).seed(1)
    assert 0 <= stream.seed(5) < 1 << 63


def test_a_stream_seed_needs_a_part_beyond_the_prefix():
    with pytest.raises(ValueError, match="at least one part"):
        SeedStream(1, "a").seed()
