import pytest

from flashinfer_bench.timing.cupti_records import ApiRecord, GpuRecord, IterationSpan, bucket_iterations


def test_each_window_gets_its_kernels_and_flush_is_excluded():
    windows = [(100, 200), (300, 400)]
    api = [
        ApiRecord(50, 1),  # flush before iteration 0
        ApiRecord(110, 2),  # iteration 0: main stream kernel
        ApiRecord(150, 3),  # iteration 0: side stream kernel
        ApiRecord(250, 4),  # flush before iteration 1
        ApiRecord(310, 5),  # iteration 1
    ]
    gpu = [
        GpuRecord(120, 5_000, 1),  # a long flush kernel overlapping everything must not count
        GpuRecord(1_000, 1_500, 2),
        GpuRecord(1_200, 2_500, 3),  # side stream ends last
        GpuRecord(3_000, 3_100, 4),
        GpuRecord(3_200, 3_260, 5),
    ]
    spans = bucket_iterations(windows, api, gpu)
    assert spans == [IterationSpan(1_000, 2_500, 2), IterationSpan(3_200, 3_260, 1)]
    assert spans[0].duration_ms == pytest.approx(1_500 / 1e6)


def test_graph_replay_kernels_share_one_correlation_id():
    windows = [(0, 10)]
    api = [ApiRecord(5, 42)]
    gpu = [GpuRecord(100 + 10 * k, 105 + 10 * k, 42) for k in range(4)]
    (span,) = bucket_iterations(windows, api, gpu)
    assert (span.start_ns, span.end_ns, span.activities) == (100, 135, 4)


def test_window_without_gpu_work_is_none_and_order_of_records_is_irrelevant():
    windows = [(0, 10), (20, 30), (40, 50)]
    api = [ApiRecord(45, 9), ApiRecord(5, 7), ApiRecord(25, 8)]  # id 8 launched nothing
    gpu = [GpuRecord(500, 600, 9), GpuRecord(100, 160, 7), GpuRecord(90, 95, 7)]
    spans = bucket_iterations(windows, api, gpu)
    assert spans[0] == IterationSpan(90, 160, 2)
    assert spans[1] is None
    assert spans[2] == IterationSpan(500, 600, 1)


def test_boundaries_are_inclusive_and_records_outside_windows_ignored():
    windows = [(10, 20)]
    api = [ApiRecord(10, 1), ApiRecord(20, 2), ApiRecord(21, 3), ApiRecord(9, 4)]
    gpu = [GpuRecord(100, 110, 1), GpuRecord(120, 130, 2), GpuRecord(0, 1_000, 3), GpuRecord(0, 1_000, 4)]
    (span,) = bucket_iterations(windows, api, gpu)
    assert span == IterationSpan(100, 130, 2)


def test_unknown_correlation_ids_are_ignored():
    (span,) = bucket_iterations([(0, 10)], [ApiRecord(1, 1)], [GpuRecord(5, 6, 99)])
    assert span is None


@pytest.mark.parametrize("windows", [[(10, 5)], [(0, 10), (5, 20)]])
def test_bad_windows_rejected(windows):
    with pytest.raises(ValueError):
        bucket_iterations(windows, [], [])
