import subprocess
import sys


def test_import_loads_no_optional_profilers():
    # torch itself may import pynvml; what matters is that importing our package adds neither module.
    code = (
        "import sys, torch;"
        "before = set(sys.modules);"
        "import flashinfer_bench.testing, flashinfer_bench.timing;"
        "bad = [m for m in ('cupti', 'pynvml') if m in sys.modules and m not in before];"
        "assert not bad, bad"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
