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
