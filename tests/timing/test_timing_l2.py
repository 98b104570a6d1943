import pytest
import torch

from flashinfer_bench.timing.l2 import copies_needed, rotating_arg_sets, tensor_bytes


def test_tensor_bytes_counts_each_tensor_once():
    x = torch.zeros(10, dtype=torch.float32)  # 40 bytes
    y = torch.zeros(3, dtype=torch.bfloat16)  # 6 bytes
    assert tensor_bytes((x, x, [y]), {"again": x, "n": 5}) == 46


@pytest.mark.parametrize(
    ("arg_bytes", "l2_bytes", "copies"),
    [
        (10, 100, 21),  # others must cover 200 bytes: 20 copies + the one in use
        (30, 100, 8),  # ceil(200 / 30) = 7, + 1
        (64 << 20, 50 << 20, 3),  # a 64 MiB tensor on a 50 MiB L2
        (10**12, 100, 2),  # never fewer than two
    ],
)
def test_copies_needed(arg_bytes, l2_bytes, copies):
    assert copies_needed(arg_bytes, l2_bytes) == copies


def test_copies_needed_rejects_no_bytes():
    with pytest.raises(ValueError):
        copies_needed(0, 100)


def test_rotating_arg_sets_clone_tensors_and_share_other_values():
    x = torch.arange(4.0)
    marker = object()
    sets = rotating_arg_sets((x, [x, 3]), {"w": x, "m": marker}, 3)
    assert len(sets) == 3
    assert sets[0][0][0] is x and sets[0][1]["w"] is x  # originals first
    for args, kwargs in sets[1:]:
        assert args[0] is not x and torch.equal(args[0], x)
        assert args[0].data_ptr() != x.data_ptr()
        assert args[1][0].data_ptr() != x.data_ptr() and args[1][1] == 3
        assert kwargs["m"] is marker
    assert sets[1][0][0].data_ptr() != sets[2][0][0].data_ptr()
