"""What runner processes do to themselves and describe (bench/process_setup.py)."""

import pickle
import subprocess
import sys

from flashinfer_bench.bench.process_setup import describe_environment


def test_environment_unpickles_without_importing_torch():
    """The judge's environment crosses to processes that never need torch (a Ray device host, then the driver):
    reading it must not import torch there (a TorchVersion would, taking seconds on a GPU host)."""
    data = pickle.dumps(describe_environment("cpu"))
    probe = "import pickle, sys; env = pickle.loads(sys.stdin.buffer.read()); print('torch' in sys.modules, env['libs']['torch'])"
    done = subprocess.run([sys.executable, "-c", probe], input=data, capture_output=True, check=True)
    imported, version = done.stdout.decode().split()
    assert imported == "False"
    assert version.split("+")[0].count(".") >= 1


def test_a_profile_is_written_at_each_checkpoint_so_a_killed_worker_leaves_its_sessions(tmp_path, monkeypatch):
    """A retired worker is killed, not stopped: what it profiled up to its last checkpoint is on disk, whole."""
    import pstats

    from flashinfer_bench.bench.process_setup import PROFILE_DIR_ENV, profile_checkpoint, profiled

    def session_work() -> int:
        return sum(range(1000))

    monkeypatch.setenv(PROFILE_DIR_ENV, str(tmp_path))
    with profiled("worker"):
        session_work()
        profile_checkpoint()
        written = list(tmp_path.glob("worker-*.prof"))
        assert len(written) == 1 and not list(tmp_path.glob("*.partial"))
        functions = {name for _, _, name in pstats.Stats(str(written[0])).stats}
        assert "session_work" in functions
    assert list(tmp_path.glob("worker-*.prof")) == written  # the stop rewrites the same file
    profile_checkpoint()  # none under way: nothing written, nothing raised
    assert list(tmp_path.iterdir()) == written
