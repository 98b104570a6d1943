"""bench/wire/failures.py: what a worker's log says beside an exception from solution code."""

from flashinfer_bench.bench.wire.failures import device_memory_note

#: The message torch 2.11's caching allocator raised in a sandboxed worker whose device ran out of memory (the real
#: dataset's largest MoE reference, docs/measurements.md), shortened.
SANDBOXED_OOM = ("NVML_SUCCESS == DriverAPI::get()->nvmlInit_v2_() INTERNAL ASSERT FAILED at "
                 "\"/pytorch/c10/cuda/CUDACachingAllocator.cpp\":1135, please report a bug to PyTorch.")


def test_the_allocator_s_failed_nvml_assertion_is_told_as_the_device_running_out_of_memory():
    note = device_memory_note(RuntimeError(SANDBOXED_OOM))
    assert note is not None and note.startswith("the device ran out of memory")


def test_other_errors_get_no_such_note():
    assert device_memory_note(RuntimeError("CUDA error: an illegal memory access was encountered")) is None
    assert device_memory_note(RuntimeError("nvmlInit_v2_() INTERNAL ASSERT FAILED in some other place")) is None
    assert device_memory_note(ValueError(SANDBOXED_OOM)) is None
