"""CUPTI timing: kernel activity records, bucketed per sample (see cupti_records for the bucketing).

``cupti`` (package cupti-python, an optional extra) is imported lazily, once per process; the activity
callbacks are registered once per process (again if another CUPTI client dropped them). Record kinds are
enabled only while measuring, so the rest of the process is not traced: per batch of samples, or for a whole
timing of one callable (``held``), whose batches (dry runs, samples, a batch measured again) then share one
switch on and off.
"""

from __future__ import annotations

import contextlib
import functools
import re
import threading
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import Any

import torch

from .cupti_records import ApiRecord, GpuRecord, IterationSpan, SampleWindow, bucket_iterations
from .steps import Step

CUPTI_MISSING = "CUPTI is not installed. Try 'pip install -U cupti-python'. Falling back to CUDA events."

_BUFFER_BYTES = 8 * 1024 * 1024
_FLUSH_FORCED = 1  # CUPTI_ACTIVITY_FLAG_FLUSH_FORCED: also deliver buffers that are not full
#: The API calls that can put work on a GPU (a kernel, a copy, a fill, a graph's nodes) and whose records the
#: span rule needs (cupti_records.py). Records of every other call (synchronising, querying the device or an
#: error, creating events) say nothing about a sample and only cost processing: about three in four of a
#: harness's calls (benchmarks/cupti_costs.py).
GPU_WORK_API = re.compile("Launch|Memcpy|Memset")
#: Where cupti-python has no enum of API call ids (13.0 has none; 13.4 has them), the ids are named through CUPTI's
#: own ``get_callback_name``: ids from 1 up to this one are asked about (CUDA 13's runtime and driver APIs hold
#: fewer than 1,000 calls each).
MAX_CALLBACK_ID = 2048


class CuptiUnavailable(RuntimeError):
    """CUPTI is importable but could not trace (another profiler attached, unsupported driver, ...)."""


@functools.cache
def load_cupti() -> ModuleType | None:
    """The ``cupti.cupti`` module, or None when cupti-python is not installed. Cached per process."""
    try:
        from cupti import cupti  # type: ignore[import-not-found]
    except ImportError:
        return None
    return cupti


class _Session:
    """Process-wide CUPTI activity state: the registered callbacks and the records they deliver."""

    def __init__(self, cupti: ModuleType) -> None:
        self.cupti = cupti
        kind = cupti.ActivityKind
        self.gpu_kinds = {int(kind.CONCURRENT_KERNEL), int(kind.MEMCPY), int(kind.MEMSET)}
        self.api_kinds = {int(kind.RUNTIME), int(kind.DRIVER)}
        self.api: list[ApiRecord] = []
        self.gpu: list[GpuRecord] = []
        self.lock = threading.Lock()
        self.register()
        #: (switch, API call id, whether its records are kept); see ``_choose_api_records``.
        self.api_choices = self._api_choices()
        #: Tracing is on; and how many ``held`` blocks keep it on between batches.
        self.enabled = False
        self.holding = 0

    def _api_choices(self) -> list[tuple[Callable[[int, int], Any], int, int]]:
        """Every API call this cupti-python can choose records for, each kept only if it can put work on the GPU
        (``GPU_WORK_API``); none where it cannot choose (every call keeps its record then)."""
        choices = []
        for domain, cbids, enable in (("RUNTIME_API", "RuntimeApiTraceCbid", "activity_enable_runtime_api"),
                                      ("DRIVER_API", "DriverApiTraceCbid", "activity_enable_driver_api")):
            members, switch = getattr(self.cupti, cbids, None), getattr(self.cupti, enable, None)
            if switch is None:
                continue
            named = [(member.name, int(member)) for member in members] if members is not None \
                else self._callback_names(domain)
            choices += [(switch, cbid, int(bool(GPU_WORK_API.search(name)))) for name, cbid in named]
        return choices

    def _callback_names(self, domain_name: str) -> list[tuple[str, int]]:
        """(name, id) of every API call of the domain, from CUPTI's ``get_callback_name`` (for a cupti-python
        without the enums of ids; without that too, none: every call then keeps its record). Recording every
        API call costs cupti-python 13.0 about 2 ms of record processing per timed call (benchmarks/cupti_costs.py,
        docs/measurements.md), against 0.2 ms for the calls that can put work on the GPU."""
        domain = getattr(getattr(self.cupti, "CallbackDomain", None), domain_name, None)
        name_of = getattr(self.cupti, "get_callback_name", None)
        if domain is None or name_of is None:
            return []
        named = []
        for cbid in range(1, MAX_CALLBACK_ID + 1):
            try:
                name = name_of(int(domain), cbid)
            except Exception:  # noqa: BLE001 - cupti.cuptiError for an id this CUPTI does not know
                continue
            if isinstance(name, bytes):
                name = name.decode(errors="replace")
            if name:
                named.append((str(name), cbid))
        return named

    def _choose_api_records(self) -> None:
        """After the API kinds are enabled (which records every call again, seen with CUPTI 13.0): keep the
        records of the calls that can put work on the GPU and drop the others. Ids CUPTI refuses (the enums'
        INVALID / SIZE members, calls this CUPTI does not know) are not asked about again."""
        refused = []
        for choice in self.api_choices:
            switch, cbid, keep = choice
            try:
                switch(cbid, keep)
            except Exception:  # noqa: BLE001 - cupti.cuptiError for an id this CUPTI does not take
                refused.append(choice)
        if refused:
            self.api_choices = [choice for choice in self.api_choices if choice not in refused]

    def register(self) -> None:
        self.cupti.activity_register_callbacks(self._buffer_requested, self._buffer_completed)

    @staticmethod
    def _buffer_requested() -> tuple[int, int]:
        return _BUFFER_BYTES, 0  # 0: no limit on records per buffer

    def _buffer_completed(self, activities: list[Any]) -> None:
        api, gpu = [], []
        for rec in activities:
            kind = int(rec.kind)
            if kind in self.gpu_kinds:
                gpu.append(GpuRecord(rec.start, rec.end, rec.correlation_id, getattr(rec, "stream_id", None)))
            elif kind in self.api_kinds:
                api.append(ApiRecord(rec.start, rec.end, rec.correlation_id))
        with self.lock:
            self.api.extend(api)
            self.gpu.extend(gpu)

    def _set_enabled(self, enabled: bool) -> None:
        toggle = self.cupti.activity_enable if enabled else self.cupti.activity_disable
        if not enabled:
            self.enabled = False
        for kind in sorted(self.gpu_kinds | self.api_kinds):
            toggle(kind)
        if enabled:
            self._choose_api_records()
            self.enabled = True

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        """Tracing, once a batch inside switched it on, stays on until the block ends: one switch on and off
        instead of one per batch (each switch costs 0.3-0.9 ms on an H100: benchmarks/cupti_costs.py). What
        runs between batches is traced too; its records are dropped when the next batch starts."""
        self.holding += 1
        try:
            yield
        finally:
            self.holding -= 1
            if not self.holding and self.enabled:
                with contextlib.suppress(Exception):  # a CUPTI that fails here has nothing left to trace
                    self._set_enabled(False)

    def pause(self) -> None:
        """Tracing off now, also inside a ``held`` block (the next batch switches it on again), and the records
        of what ran since the last batch dropped."""
        if self.enabled:
            self._set_enabled(False)
        self._drop_records()

    def _drop_records(self) -> None:
        """Have CUPTI deliver what it holds, and drop every record delivered so far."""
        self.cupti.activity_flush_all(_FLUSH_FORCED)
        with self.lock:
            self.api.clear()
            self.gpu.clear()

    def trace(
        self,
        prepare: Step,
        body: Step,
        indices: range,
        device: torch.device,
        setup: Step | None = None,
        launch_ns: float | None = None,
        device_launch_ns: int | None = None,
        after: Step | None = None,
    ) -> list[IterationSpan | None]:
        """Run the samples with tracing on and return each one's GPU span (``launch_ns``, ``device_launch_ns``:
        bucket_iterations)."""
        windows, api, gpu = self._record(prepare, body, indices, device, setup, after)
        if not api:
            # Not even the synchronize calls came back: another CUPTI client in this process replaced our
            # buffer callbacks or finalized CUPTI (FlashInfer's own bench_gpu_time ends with
            # cupti.finalize()). Register them again and measure once more.
            self.register()
            windows, api, gpu = self._record(prepare, body, indices, device, setup, after)
        return bucket_iterations(windows, api, gpu, launch_ns, device_launch_ns)

    def _record(
        self, prepare: Step, body: Step, indices: range, device: torch.device, setup: Step | None,
        after: Step | None
    ) -> tuple[list[SampleWindow], list[ApiRecord], list[GpuRecord]]:
        """Run the samples with tracing on: their host windows and the records CUPTI delivered."""
        cupti = self.cupti
        try:
            self._drop_records()
            if not self.enabled:
                self._set_enabled(True)
        except Exception as exc:  # cupti.cuptiError and friends: any failure means no CUPTI here
            raise CuptiUnavailable(f"CUPTI could not trace ({exc}). Falling back to CUDA events.") from exc
        windows: list[SampleWindow] = []
        try:
            for i in indices:
                if setup is not None:
                    # Outside every sample's window: its records are left out (switching tracing off around
                    # it would cost more than the records: ~0.2 ms per switch on an H100, cupti_costs.py).
                    setup(i)
                lead_in = cupti.get_timestamp()
                prepare(i)
                body_start = cupti.get_timestamp()
                body(i)
                body_end = cupti.get_timestamp()
                # Wait for everything, side streams included, so the next lead-in cannot overlap it.
                torch.cuda.synchronize(device)
                windows.append(SampleWindow(lead_in, body_start, body_end))
                if after is not None:
                    after(i)
        finally:
            if not self.holding:
                self._set_enabled(False)
            cupti.activity_flush_all(_FLUSH_FORCED)
        with self.lock:
            api, gpu = list(self.api), list(self.gpu)
            self.api.clear()
            self.gpu.clear()
        return windows, api, gpu


_session: _Session | None = None


def session(cupti: ModuleType) -> _Session:
    """The process's CUPTI session, created on first use."""
    global _session
    if _session is None:
        try:
            _session = _Session(cupti)
        except Exception as exc:
            raise CuptiUnavailable(
                f"CUPTI could not be set up ({exc}). Falling back to CUDA events."
            ) from exc
    return _session


@contextlib.contextmanager
def tracing_held(cupti: ModuleType | None) -> Iterator[None]:
    """``_Session.held`` for the process's session, where CUPTI can trace (else nothing)."""
    try:
        current = session(cupti) if cupti is not None else None
    except CuptiUnavailable:
        current = None
    with current.held() if current is not None else contextlib.nullcontext():
        yield


def pause_tracing(cupti: ModuleType) -> None:
    """``_Session.pause`` for the process's session, where CUPTI can trace (else nothing)."""
    try:
        current = session(cupti)
    except CuptiUnavailable:
        return
    with contextlib.suppress(Exception):  # a CUPTI that fails here has nothing left to trace
        current.pause()


def measure_cupti(
    cupti: ModuleType,
    prepare: Step,
    body: Step,
    indices: range,
    device: torch.device,
    *,
    setup: Step | None = None,
    launch_ns: float | None = None,
    device_launch_ns: int | None = None,
    after: Step | None = None,
) -> list[IterationSpan | None]:
    """GPU span of each sample from CUPTI kernel records; None for a sample that ran no GPU work. ``setup(i)``
    runs before ``prepare(i)``, outside the sample's window, after the previous sample's work has finished;
    ``launch_ns`` is the launch-processing estimate for a batch that observes none, ``device_launch_ns`` the
    device's measured figure that replaces observation (cupti_records.py); ``after(i)`` runs once sample i's work
    has finished."""
    return session(cupti).trace(prepare, body, indices, device, setup, launch_ns, device_launch_ns, after)
