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
