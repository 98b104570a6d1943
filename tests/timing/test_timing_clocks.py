import sys

import torch

from flashinfer_bench.timing import clocks


def test_clock_drop_over_ten_percent_warns():
    msg = clocks.clock_drop_warning(1980, 1500)
    assert msg is not None and "1980 MHz" in msg and "1500 MHz" in msg and "24%" in msg


def test_small_drop_or_rise_or_unknown_is_silent():
    assert clocks.clock_drop_warning(1980, 1800) is None  # 9%
    assert clocks.clock_drop_warning(1500, 1980) is None
    assert clocks.clock_drop_warning(None, 1000) is None
    assert clocks.clock_drop_warning(1000, None) is None


def test_no_clock_for_cpu():
    assert clocks.sm_clock_mhz(torch.device("cpu")) is None


def test_missing_pynvml_means_unknown_clock(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", None)
    clocks._nvml.cache_clear()
    clocks._handle.cache_clear()
    try:
        assert clocks.sm_clock_mhz(torch.device("cuda", 0)) is None
    finally:
        clocks._nvml.cache_clear()
        clocks._handle.cache_clear()
