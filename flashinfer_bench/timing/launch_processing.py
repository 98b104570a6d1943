"""What an idle gap before a kernel counts as, on devices where it has been measured across processes.

The span rule (cupti_records.py) counts the GPU front end's work on each launch: the idle gap before a kernel
whose launch was queued, and an estimate of it before a launch the host made late. That gap is not one number
per device. On an H100 the median gap between the same two kernels settled, per process, at one of about 0.96,
1.02, 1.09, 1.15, 1.22, 1.25 or 1.38 us, and stayed there for the process's life, with either lead-in tried
(``benchmarks/launch_gaps.py``; docs/measurements.md, 2026-11-24). Counted as observed, it gave one kernel
2.48-2.85 us in different processes of the same machine, and moved whole solutions by up to 9% between
two runs of the same trace set, each solution by its count of launches: more than the changes ``report compare``
must tell apart, and unfair between solutions timed in different workers of one run. So on a device listed here
every such gap counts as the device's figure, the mean of those per-process medians, and the same kernel gets
the same time in every process; elsewhere each gap counts as observed, and late launches as the batch's median.
"""

from __future__ import annotations

#: ns per launch, by a part of the device's name (``torch.cuda.get_device_name``): the mean of the median gap before
#: a queued kernel over 12 processes on lent H100 80GB HBM3 machines (per-process medians 1.02-1.38 us). Only the
#: card measured is listed: another of the family (the H100 PCIe, say) may differ.
MEASURED_NS: dict[str, int] = {"H100 80GB HBM3": 1210}


def device_launch_ns(device_name: str) -> int | None:
    """The launch processing every idle gap before a kernel counts as on this device, or None where the gaps are
    counted as observed."""
    return next((ns for part, ns in MEASURED_NS.items() if part in device_name), None)
