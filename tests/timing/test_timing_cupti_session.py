"""The CUPTI path end to end on CPU, against a fake ``cupti`` module that behaves like the activity API."""

import enum
import logging
import sys
from types import SimpleNamespace

import pytest
import torch

from flashinfer_bench.timing import api, cuda_sampler, cupti_timer, notices
from flashinfer_bench.timing.cupti_timer import CUPTI_MISSING, CuptiUnavailable
from flashinfer_bench.timing.result import CUDA_EVENTS, CUPTI
from flashinfer_bench.timing.steps import SampleSteps

NO_STEPS = SampleSteps(lambda i: None, lambda i: None)


class Kind(enum.IntEnum):
    CONCURRENT_KERNEL = 10
    MEMCPY = 1
    MEMSET = 2
    RUNTIME = 5
    DRIVER = 6
    OTHER = 99


class RuntimeCbid(enum.IntEnum):
    INVALID = 0
    cudaLaunchKernel_v7000 = 211
    cudaMemcpyAsync_v3020 = 41
    cudaDeviceSynchronize_v3020 = 165
    cudaGetDevice_v3020 = 17


class DriverCbid(enum.IntEnum):
    cuLaunchKernel = 307
    cuMemsetD8Async = 280
    cuCtxSynchronize = 17


class FakeCupti:
    """Records API launches and kernels; delivers them through the registered callback on flush."""

    ActivityKind = Kind
    RuntimeApiTraceCbid = RuntimeCbid
    DriverApiTraceCbid = DriverCbid

    def __init__(self, fail_enable=False):
        self.clock = 0
        self.enabled = set()
        self.pending = []
        self.next_corr = 1
        self.callbacks = None
        self.register_count = 0
        self.fail_enable = fail_enable
        self.api_switched_off = set()
        self.api_choice_calls = 0

    def activity_enable_runtime_api(self, cbid, enable):
        if cbid == RuntimeCbid.INVALID:
            raise RuntimeError("CUPTI_ERROR_INVALID_PARAMETER")
        self.api_choice_calls += 1
        (self.api_switched_off.discard if enable else self.api_switched_off.add)(RuntimeCbid(cbid).name)

    def activity_enable_driver_api(self, cbid, enable):
        (self.api_switched_off.discard if enable else self.api_switched_off.add)(DriverCbid(cbid).name)

    def activity_register_callbacks(self, requested, completed):
        self.register_count += 1
        self.callbacks = (requested, completed)

    def activity_enable(self, kind):
        if self.fail_enable:
            raise RuntimeError("CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED")
        self.enabled.add(kind)
        if kind in (Kind.RUNTIME, Kind.DRIVER):  # as CUPTI 13.0 does: every API call is recorded again
            self.api_switched_off.clear()

    def activity_disable(self, kind):
        self.enabled.discard(kind)

    def activity_flush_all(self, flag):
        records, self.pending = self.pending, []
        if self.callbacks is None:  # finalized: records have nowhere to go
            return
        size, _ = self.callbacks[0]()
        assert size > 0
        self.callbacks[1](records)

    def finalize(self):
        """What another CUPTI client (FlashInfer's bench_gpu_time) does when it is done."""
        self.callbacks = None

    def get_timestamp(self):
        self.clock += 10
        return self.clock

    def launch(self, gpu_start, gpu_end, kind=Kind.CONCURRENT_KERNEL):
        """A host API call that launches one GPU activity (on any stream)."""
        self.clock += 1
        corr = self.next_corr
        self.next_corr += 1
        if Kind.RUNTIME in self.enabled:
            call = {"start": self.clock, "end": self.clock + 1, "correlation_id": corr}
            self.pending.append(SimpleNamespace(kind=Kind.RUNTIME, **call))
            self.pending.append(SimpleNamespace(kind=Kind.OTHER, **call))
        if kind in self.enabled:
            self.pending.append(SimpleNamespace(kind=kind, start=gpu_start, end=gpu_end, correlation_id=corr))


@pytest.fixture
def fresh_session(monkeypatch):
    monkeypatch.setattr(cupti_timer, "_session", None)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda device=None: None)


def test_trace_buckets_kernels_and_skips_flush(fresh_session):
    fake = FakeCupti()
    dev = torch.device("cpu")

    def prepare(i):
        base = 1_000_000 * (i + 1)
        fake.launch(base - 900_000, base - 1_000)  # the flush: a long lead-in that must never count

    def body(i):
        base = 1_000_000 * (i + 1)
        fake.launch(base, base + 8_000)  # main kernel, 8 us
        fake.launch(base + 2_000, base + 20_000)  # side-stream kernel ends last
        fake.launch(base + 20_000, base + 21_000, kind=Kind.MEMSET)

    spans = cupti_timer.measure_cupti(fake, prepare, body, range(3), dev)
    # From the flush's end (fn's launch was queued before it) to the last activity's end.
    assert [s.duration_ms for s in spans] == pytest.approx([0.022] * 3)
    assert [s.activities for s in spans] == [3, 3, 3]
    assert fake.enabled == set()  # tracing is off again after measuring
    assert fake.pending == []


def test_setup_runs_before_each_sample_and_is_never_counted(fresh_session):
    fake = FakeCupti()

    def setup(i):
        base = 1_000_000 * (i + 1)
        fake.launch(base - 990_000, base - 950_000)  # e.g. drawing the next inputs: outside the sample's window

    def prepare(i):
        base = 1_000_000 * (i + 1)
        fake.launch(base - 900_000, base - 1_000)

    spans = cupti_timer.measure_cupti(fake, prepare, lambda i: fake.launch(1_000_000 * (i + 1), 1_000_000 * (i + 1) + 5_000),
                                      range(2), torch.device("cpu"), setup=setup)
    assert [s.duration_ms for s in spans] == pytest.approx([0.006] * 2)  # from the lead-in's end, as without setup
    assert [s.activities for s in spans] == [1, 1]
    assert fake.enabled == set()


def test_after_runs_once_each_sample_has_finished_and_is_never_counted(fresh_session):
    fake = FakeCupti()
    order = []

    def body(i):
        order.append(("body", i))
        fake.launch(1_000_000 * (i + 1), 1_000_000 * (i + 1) + 5_000)

    def after(i):
        order.append(("after", i))
        fake.launch(1_000_000 * (i + 1) + 10_000, 1_000_000 * (i + 1) + 90_000)  # e.g. keeping a copy of outputs

    spans = cupti_timer.measure_cupti(fake, lambda i: None, body, range(2), torch.device("cpu"), after=after)
    assert order == [("body", 0), ("after", 0), ("body", 1), ("after", 1)]
    assert [s.activities for s in spans] == [1, 1]  # the copies are in no sample


#: The API calls the fakes know that put no work on the GPU: their records are switched off while measuring.
NO_GPU_WORK_CALLS = {"cudaDeviceSynchronize_v3020", "cudaGetDevice_v3020", "cuCtxSynchronize"}


def api_records_switched_off_while_measuring(fake: FakeCupti) -> list[set[str]]:
    """Per sample of a two-sample measurement (one launch each), the API calls whose records were switched off."""
    switched_off = []

    def body(i):
        switched_off.append(set(fake.api_switched_off))
        fake.launch(100, 150)

    cupti_timer.measure_cupti(fake, lambda i: None, body, range(2), torch.device("cpu"))
    return switched_off


def test_only_calls_that_put_work_on_the_gpu_leave_api_records(fresh_session):
    fake = FakeCupti()
    assert api_records_switched_off_while_measuring(fake) == [NO_GPU_WORK_CALLS] * 2
    calls = fake.api_choice_calls
    api_records_switched_off_while_measuring(fake)
    assert fake.api_choice_calls - calls == len(RuntimeCbid) - 1  # the refused INVALID is not asked again


class CallbackDomain(enum.IntEnum):
    DRIVER_API = 1
    RUNTIME_API = 2


class CuptiWithoutIdEnums(FakeCupti):
    """As cupti-python 13.0 is: no enums of API call ids, but CUPTI's get_callback_name."""

    RuntimeApiTraceCbid = None
    DriverApiTraceCbid = None
    CallbackDomain = CallbackDomain

    def get_callback_name(self, domain, cbid):
        ids = RuntimeCbid if domain == CallbackDomain.RUNTIME_API else DriverCbid
        if cbid not in ids._value2member_map_:
            raise RuntimeError("CUPTI_ERROR_INVALID_PARAMETER")
        return ids(cbid).name.encode()


def test_without_enums_of_call_ids_the_calls_are_named_through_cupti(fresh_session):
    assert api_records_switched_off_while_measuring(CuptiWithoutIdEnums()) == [NO_GPU_WORK_CALLS] * 2


def test_callbacks_registered_once_per_process(fresh_session):
    fake = FakeCupti()
    for _ in range(3):
        cupti_timer.measure_cupti(
            fake, lambda i: None, lambda i: fake.launch(0, 5), range(2), torch.device("cpu")
        )
    assert fake.register_count == 1


def test_callbacks_are_registered_again_after_another_client_finalized_cupti(fresh_session):
    fake = FakeCupti()
    body = lambda i: fake.launch(100, 150)  # noqa: E731
    cupti_timer.measure_cupti(fake, lambda i: None, body, range(1), torch.device("cpu"))
    fake.finalize()
    spans = cupti_timer.measure_cupti(fake, lambda i: None, body, range(2), torch.device("cpu"))
    assert [s.duration_ms for s in spans] == pytest.approx([50 / 1e6] * 2)
    assert fake.register_count == 2


def test_stale_records_from_before_measuring_are_discarded(fresh_session):
    fake = FakeCupti()
    cupti_timer.session(fake)
    fake.enabled.update({Kind.RUNTIME, Kind.CONCURRENT_KERNEL})
    fake.launch(0, 999_999_999)  # traced earlier, not yet flushed
    fake.enabled.clear()
    spans = cupti_timer.measure_cupti(fake, lambda i: None, lambda i: fake.launch(100, 150), range(1), "cpu")
    assert spans[0].duration_ms == pytest.approx(50 / 1e6)


def test_enable_failure_raises_cupti_unavailable(fresh_session):
    fake = FakeCupti(fail_enable=True)
    with pytest.raises(CuptiUnavailable, match="MULTIPLE_SUBSCRIBERS"):
        cupti_timer.measure_cupti(fake, lambda i: None, lambda i: None, range(1), torch.device("cpu"))


def count_switches(fake: FakeCupti) -> list[str]:
    """The fake's kernel-record switch, logged: one entry per switch of the whole tracing on or off."""
    switches = []
    enable, disable = fake.activity_enable, fake.activity_disable

    def on(kind):
        enable(kind)
        if kind == Kind.CONCURRENT_KERNEL:
            switches.append("on")

    def off(kind):
        disable(kind)
        if kind == Kind.CONCURRENT_KERNEL:
            switches.append("off")

    fake.activity_enable, fake.activity_disable = on, off
    return switches


def test_held_tracing_switches_once_for_several_batches_and_drops_what_ran_between(fresh_session):
    fake = FakeCupti()
    switches = count_switches(fake)
    body = lambda i: fake.launch(100, 150)  # noqa: E731
    with cupti_timer.tracing_held(fake):
        first = cupti_timer.measure_cupti(fake, lambda i: None, body, range(2), "cpu")
        assert fake.enabled  # still on between the batches
        fake.launch(0, 999_999_999)  # between batches: traced, but no batch's
        second = cupti_timer.measure_cupti(fake, lambda i: None, body, range(3), "cpu")
    assert switches == ["on", "off"]
    assert fake.enabled == set()
    assert [s.duration_ms for s in first + second] == pytest.approx([50 / 1e6] * 5)


def test_unheld_batches_switch_tracing_each(fresh_session):
    fake = FakeCupti()
    switches = count_switches(fake)
    for _ in range(2):
        cupti_timer.measure_cupti(fake, lambda i: None, lambda i: fake.launch(100, 150), range(2), "cpu")
    assert switches == ["on", "off", "on", "off"]


def test_held_tracing_where_cupti_cannot_trace_falls_through(fresh_session):
    fake = FakeCupti(fail_enable=True)
    with cupti_timer.tracing_held(fake):
        with pytest.raises(CuptiUnavailable):
            cupti_timer.measure_cupti(fake, lambda i: None, lambda i: None, range(1), "cpu")
    assert not cupti_timer._session.enabled and cupti_timer._session.holding == 0
    with cupti_timer.tracing_held(None):  # no CUPTI installed: nothing to hold, and no error
        assert cupti_timer._session.holding == 0


# ----- method choice and the missing-CUPTI warning -----


@pytest.fixture
def no_cupti(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupti", None)  # makes `import cupti` raise ImportError
    cupti_timer.load_cupti.cache_clear()
    monkeypatch.setattr(notices, "_already_logged", set())
    yield
    cupti_timer.load_cupti.cache_clear()


def test_missing_cupti_warns_once_in_flashinfers_words(no_cupti, caplog):
    caplog.set_level(logging.WARNING, logger=notices.LOGGER_NAME)
    notes_a, notes_b = [], []
    assert api.choose_method(True, notes_a) == (CUDA_EVENTS, None)
    assert api.choose_method(True, notes_b) == (CUDA_EVENTS, None)
    logged = [r.getMessage() for r in caplog.records if r.name == notices.LOGGER_NAME]
    assert logged == [
        "CUPTI is not installed. Try 'pip install -U cupti-python'. Falling back to CUDA events."
    ]
    assert notes_a == notes_b == [CUPTI_MISSING]


def test_enable_cupti_false_forces_events_without_warning(no_cupti, caplog):
    caplog.set_level(logging.WARNING, logger=notices.LOGGER_NAME)
    notes = []
    assert api.choose_method(False, notes) == (CUDA_EVENTS, None)
    assert notes == [] and caplog.records == []


def test_installed_cupti_is_chosen(monkeypatch):
    fake_pkg = SimpleNamespace(cupti=SimpleNamespace(name="fake"))
    monkeypatch.setitem(sys.modules, "cupti", fake_pkg)
    cupti_timer.load_cupti.cache_clear()
    try:
        method, module = api.choose_method(True, [])
    finally:
        cupti_timer.load_cupti.cache_clear()
    assert method == CUPTI and module is fake_pkg.cupti


# ----- the sampler's run-time fallbacks -----


def test_sampler_divides_by_calls_and_drops_empty_samples(monkeypatch):
    from flashinfer_bench.timing.cupti_records import IterationSpan

    spans = [IterationSpan(0, 2_000_000, 1, 1_000_000, 2_000_000), None, IterationSpan(0, 4_000_000, 1, 0, 4_000_000)]
    monkeypatch.setattr(cuda_sampler, "measure_cupti", lambda *a, **k: spans)
    sampler = cuda_sampler.CudaSampler(CUPTI, object(), NO_STEPS, 2, torch.device("cpu"), [])
    assert sampler(range(3)) == [1.0, 2.0]
    assert sampler.kernel_samples == [0.5, 2.0]  # kernel records alone, per call
    assert sampler.dropped == 1 and sampler.method == CUPTI


def test_sampler_lengthens_the_lead_in_while_the_host_is_late_and_carries_the_launch_gap(monkeypatch):
    from flashinfer_bench.timing import lead_in
    from flashinfer_bench.timing.cupti_records import IterationSpan

    late = IterationSpan(0, 10_000, 1, 5_000, 6_000, estimated_gaps=1, first_late_ns=40_000)
    early = IterationSpan(0, 10_000, 1, 5_000, 6_000, launch_gap_ns=1_000)
    calls = []

    def measure(cupti, prepare, body, indices, dev, *, setup=None, launch_ns=None, device_launch_ns=None, after=None):
        prepare(0)
        calls.append(launch_ns)
        return [late] * 4 if len(calls) == 1 else [early] * 3 + [late]

    spins = []
    monkeypatch.setattr(lead_in, "spin", spins.append)
    monkeypatch.setattr(cuda_sampler, "measure_cupti", measure)
    sampler = cuda_sampler.CudaSampler(CUPTI, object(), NO_STEPS, 1, torch.device("cpu"), [])
    assert sampler(range(4)) == [0.006] * 4  # the batch measured again: one late sample in four is tolerated
    assert sampler.extra_lead_in_ns == 70_000  # 1.5 x the host's 40 us + 10 us
    assert spins == [int(70_000 * lead_in.MAX_SM_CYCLES_PER_NS)]  # the second try's lead-in ends with a spin
    assert sampler.launch_ns == 1_000 and sampler.estimated_samples == 1
    sampler(range(4))
    assert calls == [None, None, 1_000]  # later batches get the gap observed so far


def test_traced_dry_runs_size_the_first_lead_in(monkeypatch):
    from flashinfer_bench.timing.cupti_records import IterationSpan

    def span(late_ns):
        return IterationSpan(0, 10_000, 1, 5_000, 6_000, first_late_ns=late_ns,
                             launch_gap_ns=None if late_ns else 900)

    # Ten dry runs: one-off costs in the first (left out), the host 20-30 us late in three more; the rest early.
    dry = [span(500_000), span(20_000), span(30_000), span(20_000)] + [span(0)] * 6
    batches = []

    def measure(cupti, prepare, body, indices, dev, *, setup=None, launch_ns=None, device_launch_ns=None, after=None):
        batches.append((len(indices), launch_ns))
        return dry if len(batches) == 1 else [span(0)] * len(indices)

    monkeypatch.setattr(cuda_sampler, "measure_cupti", measure)
    sampler = cuda_sampler.CudaSampler(CUPTI, object(), NO_STEPS, 1, torch.device("cpu"), [])
    sampler.warm_up(10, traced=True)
    # The lead-in covers all but a quarter of the other nine (the 7th of 9 in order of lateness: 20 us).
    assert sampler.extra_lead_in_ns == int(cuda_sampler.LEAD_IN_GROWTH * 20_000) + cuda_sampler.LEAD_IN_SLACK_NS
    assert sampler.launch_ns == 900
    assert sampler(range(5)) == [0.006] * 5
    assert batches == [(10, None), (5, 900)]  # the first batch measured once, with the dry runs' launch gap


def test_dry_runs_with_the_host_early_leave_the_lead_in_alone(monkeypatch):
    from flashinfer_bench.timing.cupti_records import IterationSpan

    early = IterationSpan(0, 10_000, 1, 5_000, 6_000)
    monkeypatch.setattr(cuda_sampler, "measure_cupti", lambda *a, **k: [early, early, None])
    sampler = cuda_sampler.CudaSampler(CUPTI, object(), NO_STEPS, 1, torch.device("cpu"), [])
    sampler.warm_up(3, traced=True)
    assert sampler.extra_lead_in_ns == 0 and sampler.method == CUPTI


def test_untraced_dry_runs_run_each_step_once(monkeypatch):
    ran, synced = [], []
    steps = SampleSteps(lambda i: ran.append(("lead-in", i)), lambda i: ran.append(("call", i)),
                        lambda i: ran.append(("setup", i)))
    monkeypatch.setattr(cuda_sampler, "measure_cupti", lambda *a, **k: pytest.fail("a graph's dry runs are not traced"))
    monkeypatch.setattr(torch.cuda, "synchronize", synced.append)
    sampler = cuda_sampler.CudaSampler(CUPTI, object(), steps, 1, torch.device("cpu"), [])
    sampler.warm_up(2, traced=False)
    assert ran == [("setup", 0), ("lead-in", 0), ("call", 0), ("setup", 1), ("lead-in", 1), ("call", 1)]
    assert len(synced) == 3  # after each call (a setup follows), and once at the end


def test_sampler_gives_up_lengthening_at_the_cap(monkeypatch):
    from flashinfer_bench.timing import lead_in
    from flashinfer_bench.timing.cupti_records import IterationSpan

    late = IterationSpan(0, 10_000, 1, 5_000, 6_000, estimated_gaps=1, first_late_ns=10 * lead_in.MAX_EXTRA_LEAD_IN_NS)
    tries = []
    monkeypatch.setattr(lead_in, "spin", lambda cycles: None)
    monkeypatch.setattr(cuda_sampler, "measure_cupti", lambda *a, **k: tries.append(1) or [late])
    sampler = cuda_sampler.CudaSampler(CUPTI, object(), NO_STEPS, 1, torch.device("cpu"), [])
    assert sampler(range(1)) == [0.006]
    assert sampler.extra_lead_in_ns == lead_in.MAX_EXTRA_LEAD_IN_NS and len(tries) == 2
    assert sampler.launch_ns is None and sampler.estimated_samples == 1


def test_sampler_falls_back_to_events_when_cupti_fails(monkeypatch, caplog):
    def broken(*a, **k):
        raise CuptiUnavailable("CUPTI could not trace (boom). Falling back to CUDA events.")

    monkeypatch.setattr(cuda_sampler, "measure_cupti", broken)
    monkeypatch.setattr(cuda_sampler, "measure_events", lambda prepare, body, indices, dev, setup=None, after=None: [3.0] * len(indices))
    monkeypatch.setattr(notices, "_already_logged", set())
    notes = []
    sampler = cuda_sampler.CudaSampler(CUPTI, object(), NO_STEPS, 3, torch.device("cpu"), notes)
    assert sampler(range(2)) == [1.0, 1.0]
    assert sampler.method == CUDA_EVENTS
    assert notes == ["CUPTI could not trace (boom). Falling back to CUDA events."]


def test_sampler_falls_back_when_cupti_sees_no_gpu_work(monkeypatch):
    monkeypatch.setattr(cuda_sampler, "measure_cupti", lambda *a, **k: [None, None])
    monkeypatch.setattr(cuda_sampler, "measure_events", lambda prepare, body, indices, dev, setup=None, after=None: [0.5] * len(indices))
    notes = []
    sampler = cuda_sampler.CudaSampler(CUPTI, object(), NO_STEPS, 1, torch.device("cpu"), notes)
    assert sampler(range(2)) == [0.5, 0.5]
    assert sampler.method == CUDA_EVENTS
    assert any("no GPU work" in n for n in notes)


def test_pausing_inside_a_held_block_stops_tracing_until_the_next_batch(fresh_session):
    fake = FakeCupti()
    switches = count_switches(fake)
    with cupti_timer.tracing_held(fake):
        cupti_timer.measure_cupti(fake, lambda i: None, lambda i: fake.launch(100, 150), range(2), "cpu")
        cupti_timer.pause_tracing(fake)
        assert fake.enabled == set()
        fake.launch(0, 999_999_999)  # untraced now
        assert fake.pending == []
    assert switches == ["on", "off"]  # the held block's end finds tracing off already


def many_activity_dry_runs(monkeypatch, activities: int, most: int) -> tuple[cuda_sampler.CudaSampler, list, list]:
    """A sampler that may make ``most`` activities per call, after dry runs of ``activities`` each (two calls per
    sample); returns it, its notes and the pauses of tracing."""
    from flashinfer_bench.timing.cupti_records import IterationSpan

    span = IterationSpan(0, 10_000, 2 * activities, 5_000, 6_000)
    monkeypatch.setattr(cuda_sampler, "measure_cupti", lambda *a, **k: [span] * 5)
    monkeypatch.setattr(cuda_sampler, "measure_events", lambda prepare, body, indices, dev, setup=None, after=None: [0.5] * len(indices))
    paused = []
    monkeypatch.setattr(cuda_sampler, "pause_tracing", paused.append)
    notes = []
    sampler = cuda_sampler.CudaSampler(CUPTI, "cupti", NO_STEPS, 2, torch.device("cpu"), notes, most)
    sampler.warm_up(5, traced=True)
    return sampler, notes, paused


def test_dry_runs_of_more_activities_than_allowed_turn_to_events(monkeypatch):
    sampler, notes, paused = many_activity_dry_runs(monkeypatch, activities=40, most=16)
    assert sampler.method == CUDA_EVENTS and paused == ["cupti"] and sampler.activities_per_call == 40
    assert notes == ["fn made 40 GPU activities per call, more than 16: timed with CUDA events, whose cost does "
                     "not grow with them (CUPTI's does, per record)."]
    assert sampler(range(3)) == [0.25] * 3  # events, per call


def test_dry_runs_within_the_allowed_activities_stay_with_cupti(monkeypatch):
    sampler, notes, paused = many_activity_dry_runs(monkeypatch, activities=16, most=16)
    assert sampler.method == CUPTI and not paused and not notes and sampler.activities_per_call == 16
