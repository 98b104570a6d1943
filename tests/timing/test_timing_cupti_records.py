import pytest

from flashinfer_bench.timing.cupti_records import (
    ApiRecord,
    GpuRecord,
    IterationSpan,
    SampleWindow,
    bucket_iterations,
)


def api(start, corr, end=None):
    return ApiRecord(start, start + 2 if end is None else end, corr)


def test_each_window_gets_its_kernels_and_the_lead_in_is_excluded():
    windows = [SampleWindow(40, 100, 200), SampleWindow(240, 300, 400)]
    records = [
        api(50, 1),  # lead-in (flush) before sample 0
        api(110, 2),  # sample 0: main stream kernel
        api(150, 3),  # sample 0: side stream kernel
        api(250, 4),  # lead-in before sample 1
        api(310, 5),  # sample 1
    ]
    gpu = [
        GpuRecord(120, 950, 1),  # the flush: never counted
        GpuRecord(1_000, 1_500, 2),
        GpuRecord(1_200, 2_500, 3),  # side stream ends last
        GpuRecord(3_000, 3_150, 4),
        GpuRecord(3_200, 3_260, 5),
    ]
    spans = bucket_iterations(windows, records, gpu)
    # A sample starts when its lead-in ended (the launch was submitted long before); overlap counts once.
    assert spans == [
        IterationSpan(950, 2_500, 2, 1_000, 1_550, launch_gap_ns=50),
        IterationSpan(3_150, 3_260, 1, 3_200, 110, launch_gap_ns=50),
    ]
    assert spans[0].duration_ms == pytest.approx(1_550 / 1e6)
    assert spans[0].activity_ms == pytest.approx(1_500 / 1e6)


def test_a_late_submission_with_nothing_observed_counts_from_the_submission():
    windows = [SampleWindow(0, 10, 500)]
    records = [api(1, 1), api(20, 2, end=400)]  # the host took until 400 to submit fn's kernel
    gpu = [GpuRecord(5, 100, 1), GpuRecord(420, 500, 2)]
    (span,) = bucket_iterations(windows, records, gpu)
    assert (span.gpu_ns, span.estimated_gaps, span.first_late_ns, span.launch_gap_ns) == (100, 1, 300, None)


def test_a_late_submission_counts_the_launch_estimate_it_is_given():
    windows = [SampleWindow(0, 10, 500)]
    records = [api(1, 1), api(20, 2, end=400)]
    gpu = [GpuRecord(5, 100, 1), GpuRecord(420, 500, 2)]
    (span,) = bucket_iterations(windows, records, gpu, launch_ns=7)
    assert span.gpu_ns == 87
    # The launch call returned after its kernel had started: the estimate still counts.
    (span,) = bucket_iterations(windows, [api(1, 1), api(20, 2, end=450)], gpu, launch_ns=7)
    assert span.gpu_ns == 87
    (span,) = bucket_iterations(windows, [api(1, 1), api(20, 2, end=450)], gpu)
    assert span.gpu_ns == 80  # nothing to estimate from: the kernel record alone


def test_the_batch_calibrates_late_samples_from_its_early_ones():
    windows = [SampleWindow(0, 10, 500), SampleWindow(600, 610, 1_100)]
    records = [api(1, 1), api(20, 2), api(601, 3), api(620, 4, end=900)]
    gpu = [
        GpuRecord(5, 100, 1),
        GpuRecord(104, 150, 2),  # submitted at 22, before the lead-in ended: a 4 ns launch gap observed
        GpuRecord(605, 700, 3),
        GpuRecord(930, 976, 4),  # submitted at 900, 200 after the lead-in ended
    ]
    early, late = bucket_iterations(windows, records, gpu, launch_ns=50)
    assert (early.gpu_ns, early.launch_gap_ns, early.estimated_gaps) == (50, 4, 0)
    assert (late.gpu_ns, late.launch_gap_ns, late.estimated_gaps, late.first_late_ns) == (50, None, 1, 200)


def test_on_a_measured_device_every_launch_gap_counts_the_devices_figure():
    # Two samples of the same kernels whose queued gaps came out 4 and 9 (as one H100 process sees ~1.0 us and
    # another ~1.4 us), then a late second launch: with the device's figure (6) both count alike.
    windows = [SampleWindow(0, 10, 500), SampleWindow(600, 610, 1_100), SampleWindow(1_200, 1_210, 1_700)]
    records = [api(1, 1), api(20, 2), api(601, 3), api(620, 4), api(1_201, 5), api(1_220, 6, end=1_230),
               api(1_380, 7, end=1_390)]
    gpu = [GpuRecord(5, 100, 1), GpuRecord(104, 150, 2), GpuRecord(605, 700, 3), GpuRecord(709, 755, 4),
           GpuRecord(1_205, 1_300, 5), GpuRecord(1_304, 1_350, 6), GpuRecord(1_400, 1_420, 7)]
    observed = bucket_iterations(windows, records, gpu)
    assert [s.gpu_ns for s in observed] == [50, 55, 50 + 4 + 20]  # the late launch: the batch's median gap, 4
    fixed = bucket_iterations(windows, records, gpu, device_launch_ns=6)
    assert [s.gpu_ns for s in fixed] == [52, 52, 52 + 6 + 20]
    assert [s.launch_gap_ns for s in fixed] == [4, 9, 4]  # what was observed is still reported
    assert fixed[2].estimated_gaps == 1
    # A queued gap shorter than half the figure is counted as observed (the GPU had the launch ready sooner).
    (short,) = bucket_iterations([SampleWindow(0, 10, 500)], [api(1, 1), api(20, 2)],
                                 [GpuRecord(5, 100, 1), GpuRecord(102, 150, 2)], device_launch_ns=6)
    assert short.gpu_ns == 50


def test_the_devices_figure_is_found_by_name():
    from flashinfer_bench.timing.launch_processing import MEASURED_NS, device_launch_ns

    assert device_launch_ns("NVIDIA H100 80GB HBM3") == MEASURED_NS["H100 80GB HBM3"] == 1210
    assert device_launch_ns("NVIDIA H100 PCIe") is None  # another card of the name, not measured
    assert device_launch_ns("NVIDIA A100-SXM4-80GB") is None and device_launch_ns("cpu") is None


def test_host_work_between_two_kernels_is_not_counted():
    windows = [SampleWindow(0, 10, 1_000)]
    records = [api(1, 1), api(20, 2, end=30), api(200, 3, end=210)]  # ~170 of host work between launches
    gpu = [GpuRecord(5, 100, 1), GpuRecord(105, 125, 2), GpuRecord(215, 235, 3)]
    (span,) = bucket_iterations(windows, records, gpu)
    # 5 (first launch, observed) + 20 + 5 (the second gap: late, counted as the observed launch gap) + 20
    assert (span.gpu_ns, span.estimated_gaps, span.first_late_ns) == (50, 1, 0)
    assert (span.start_ns, span.end_ns, span.activity_ms) == (100, 235, pytest.approx(130 / 1e6))


def test_gaps_between_launches_submitted_early_are_the_gpus_own():
    windows = [SampleWindow(0, 10, 1_000)]
    records = [api(1, 1), api(20, 2), api(30, 3)]
    gpu = [GpuRecord(5, 100, 1), GpuRecord(105, 125, 2), GpuRecord(140, 160, 3)]
    (span,) = bucket_iterations(windows, records, gpu, launch_ns=1)
    assert (span.gpu_ns, span.estimated_gaps) == (60, 0)


def test_the_span_never_starts_after_the_first_activity():
    # fn's kernel ran on a stream that did not wait for the lead-in, and the launch call returned late.
    windows = [SampleWindow(0, 10, 500)]
    records = [api(1, 1), api(20, 2, end=300)]
    gpu = [GpuRecord(5, 1_000, 1), GpuRecord(200, 260, 2)]
    (span,) = bucket_iterations(windows, records, gpu)
    assert (span.start_ns, span.end_ns, span.first_activity_ns, span.gpu_ns) == (200, 260, 200, 60)


def test_the_inner_driver_call_is_the_submission():
    windows = [SampleWindow(0, 10, 500)]
    records = [api(1, 1), ApiRecord(20, 350, 2), ApiRecord(21, 300, 2)]  # runtime call around driver call
    gpu = [GpuRecord(5, 100, 1), GpuRecord(320, 400, 2)]
    (span,) = bucket_iterations(windows, records, gpu)
    assert span.gpu_ns == 100  # from the driver call's return at 300, not the runtime call's at 350


def test_without_a_lead_in_the_span_starts_at_the_first_activity():
    windows = [SampleWindow(0, 0, 10)]
    (span,) = bucket_iterations(windows, [api(5, 42)], [GpuRecord(100, 105, 42), GpuRecord(110, 135, 42)])
    assert (span.start_ns, span.end_ns, span.activities, span.gpu_ns) == (100, 135, 2, 35)


def test_graph_replay_kernels_share_one_correlation_id():
    windows = [SampleWindow(0, 2, 10)]
    records = [api(1, 41), api(5, 42)]
    gpu = [GpuRecord(50, 90, 41)] + [GpuRecord(100 + 10 * k, 105 + 10 * k, 42) for k in range(4)]
    (span,) = bucket_iterations(windows, records, gpu)
    assert (span.start_ns, span.end_ns, span.activities, span.gpu_ns) == (90, 135, 4, 45)


def test_window_without_gpu_work_is_none_and_order_of_records_is_irrelevant():
    windows = [SampleWindow(0, 0, 10), SampleWindow(20, 20, 30), SampleWindow(40, 40, 50)]
    records = [api(45, 9), api(5, 7), api(25, 8)]  # id 8 launched nothing
    gpu = [GpuRecord(500, 600, 9), GpuRecord(100, 160, 7), GpuRecord(90, 95, 7)]
    spans = bucket_iterations(windows, records, gpu)
    assert spans[0] == IterationSpan(90, 160, 2, 90, 70)
    assert spans[1] is None
    assert spans[2] == IterationSpan(500, 600, 1, 500, 100)


def test_boundaries_are_inclusive_and_records_outside_windows_ignored():
    windows = [SampleWindow(5, 10, 20)]
    records = [api(10, 1), api(20, 2), api(21, 3), api(4, 4), api(5, 5)]
    gpu = [
        GpuRecord(100, 110, 1),
        GpuRecord(120, 130, 2),
        GpuRecord(0, 1_000, 3),  # launched after the window
        GpuRecord(0, 1_000, 4),  # launched before it
        GpuRecord(40, 60, 5),  # the lead-in, launched at its first instant
    ]
    (span,) = bucket_iterations(windows, records, gpu)
    assert span == IterationSpan(60, 130, 2, 100, 70, launch_gap_ns=40)


def test_unknown_correlation_ids_are_ignored():
    (span,) = bucket_iterations([SampleWindow(0, 0, 10)], [api(1, 1)], [GpuRecord(5, 6, 99)])
    assert span is None


@pytest.mark.parametrize(
    "windows",
    [
        [SampleWindow(0, 10, 5)],
        [SampleWindow(6, 5, 10)],
        [SampleWindow(0, 0, 10), SampleWindow(5, 5, 20)],
    ],
)
def test_bad_windows_rejected(windows):
    with pytest.raises(ValueError):
        bucket_iterations(windows, [], [])


def test_a_kernel_starting_before_the_work_ahead_of_it_on_its_stream_is_an_early_start():
    windows = [SampleWindow(0, 10, 1_000)]
    records = [api(1, 1), api(20, 2), api(30, 3), api(40, 4)]
    gpu = [
        GpuRecord(5, 100, 1, stream_id=7),  # the lead-in
        GpuRecord(90, 150, 2, stream_id=7),  # programmatic dependent launch: began during the lead-in
        GpuRecord(140, 170, 3, stream_id=7),  # and the next one during it
        GpuRecord(60, 80, 4, stream_id=9),  # another stream, which never waited for the lead-in: not early
    ]
    (span,) = bucket_iterations(windows, records, gpu)
    assert span.early_starts == 2
    assert (span.start_ns, span.gpu_ns) == (60, 110)  # counted once: 60..80, 90..170
    side_only = bucket_iterations(windows, records, [gpu[0], gpu[3]])[0]
    assert side_only.early_starts == 0
