"""Outputs as bytes and back (bench/slot.py): the buffer the judge reads, and a replayed round's ring rows."""

import torch

from flashinfer_bench.bench.slot import Slot, TensorLayout, from_bytes, raw_bytes, total_bytes

#: An odd number of bytes first, so that the next outputs do not start at a multiple of their element size.
LAYOUTS = [TensorLayout("mask", torch.bool, (3,)), TensorLayout("values", torch.float32, (2,)),
           TensorLayout("index", torch.int64, (1,))]


def outputs(k: int) -> list[torch.Tensor]:
    return [torch.tensor([True, False, k % 2 == 0]), torch.tensor([1.5 * k, -2.0]), torch.tensor([k])]


def test_outputs_written_and_read_back_through_the_buffer_are_equal_whatever_their_alignment():
    slot = Slot(bytearray(4096))
    end = slot.write(1, outputs(3))  # an odd offset too
    got, after = slot.read(1, LAYOUTS, "cpu")
    assert after == end == 1 + total_bytes(LAYOUTS)
    assert all(torch.equal(a, b) for a, b in zip(got, outputs(3), strict=True))


def test_a_ring_row_gives_back_its_call_s_outputs_in_any_row():
    ring = torch.stack([torch.cat([raw_bytes(t) for t in outputs(k)]) for k in range(3)])
    for k in range(3):
        got = from_bytes(ring[k], LAYOUTS)
        assert [t.dtype for t in got] == [layout.dtype for layout in LAYOUTS]
        assert all(torch.equal(a, b) for a, b in zip(got, outputs(k), strict=True))


def test_a_large_read_split_among_threads_copies_every_byte_in_place():
    from flashinfer_bench.bench.slot import SPLIT_COPY_BYTES, host_copy

    count = 3 * SPLIT_COPY_BYTES + 12_345  # pieces of unequal length
    source = torch.randint(0, 256, (count + 7,), dtype=torch.uint8)
    target = torch.zeros(count + 16, dtype=torch.uint8)
    host_copy(target.data_ptr() + 5, source.data_ptr() + 7, count, threads=3)
    assert torch.equal(target[5:5 + count], source[7:])
    assert not target[:5].any() and not target[5 + count:].any()  # nothing written outside


def test_a_shipment_read_on_several_threads_gives_back_each_call_s_outputs(monkeypatch):
    from flashinfer_bench.bench import slot as slot_module
    from flashinfer_bench.bench.judge.solution import read_outputs

    monkeypatch.setattr(slot_module, "COPY_THREADS", 3)
    layouts = [TensorLayout("out", torch.float32, (slot_module.SPLIT_COPY_BYTES // 4 + 3,))]
    calls = [torch.randn(layouts[0].shape) for _ in range(4)]
    slot = Slot(bytearray(total_bytes(layouts) * 4))
    end = 0
    for call in calls:
        end = slot.write(end, [call])
    arena = torch.empty(end, dtype=torch.uint8)
    got, after = read_outputs(slot, layouts, 4, "cpu", lambda nbytes: arena[:nbytes])
    assert after == end
    assert all(torch.equal(g[0], c) for g, c in zip(got, calls, strict=True))
