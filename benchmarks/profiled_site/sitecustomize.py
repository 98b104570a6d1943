"""A deterministic profile of flashinfer_bench's own functions, in the processes that start with this folder on
``PYTHONPATH`` and ``FLASHINFER_BENCH_FUNCTION_PROFILE_DIR`` set (benchmarks/judge_functions.py does both).

Every function and method a flashinfer_bench module defines is wrapped as the module is imported, and its calls,
time with and without its callees (nanoseconds) are written to ``<dir>/<pid>.json`` at most every 2 s and at exit.
Workers are left alone: their sandbox is entered by ``unshare``, which a process with a second thread cannot make,
and this module starts no thread anywhere. Calls from threads other than the main one are not counted.
"""

import os

DIRECTORY = os.environ.get("FLASHINFER_BENCH_FUNCTION_PROFILE_DIR")

if DIRECTORY:
    import atexit
    import functools
    import importlib.abc
    import importlib.machinery
    import inspect
    import json
    import multiprocessing
    import sys
    import threading
    import time

    #: function -> [calls, ns with callees, ns without]
    STATS: dict[str, list[int]] = {}
    #: Per function under way (innermost last): the ns its callees took so far.
    UNDER_WAY: list[int] = []
    LAST_WRITTEN = [time.monotonic()]

    def write() -> None:
        path = os.path.join(DIRECTORY, f"{os.getpid()}.json")
        try:
            with open(path + ".tmp", "w") as out:
                json.dump({"argv": sys.argv[:3], "stats": STATS}, out)
            os.replace(path + ".tmp", path)
        except OSError:
            pass

    def clocked(function, label: str):
        if inspect.isgeneratorfunction(function) or inspect.iscoroutinefunction(function):
            return function

        @functools.wraps(function)
        def wrapper(*args, **kwargs):
            if threading.current_thread() is not threading.main_thread():
                return function(*args, **kwargs)
            UNDER_WAY.append(0)
            start = time.perf_counter_ns()
            try:
                return function(*args, **kwargs)
            finally:
                spent = time.perf_counter_ns() - start
                callees = UNDER_WAY.pop()
                if UNDER_WAY:
                    UNDER_WAY[-1] += spent
                stats = STATS.setdefault(label, [0, 0, 0])
                stats[0] += 1
                stats[1] += spent
                stats[2] += spent - callees
                if not UNDER_WAY and time.monotonic() - LAST_WRITTEN[0] > 2.0:
                    LAST_WRITTEN[0] = time.monotonic()
                    write()

        return wrapper

    def clock_module(module) -> None:
        name = module.__name__
        for attribute, value in list(vars(module).items()):
            if inspect.isfunction(value) and value.__module__ == name:
                setattr(module, attribute, clocked(value, f"{name}.{value.__qualname__}"))
            elif inspect.isclass(value) and value.__module__ == name:
                for key, member in list(vars(value).items()):
                    label = f"{name}.{value.__qualname__}.{key}"
                    if isinstance(member, (staticmethod, classmethod)):
                        setattr(value, key, type(member)(clocked(member.__func__, label)))
                    elif inspect.isfunction(member) and (not key.startswith("__") or key == "__call__"):
                        setattr(value, key, clocked(member, label))

    class ClockingLoader(importlib.abc.Loader):
        def __init__(self, loader) -> None:
            self.loader = loader

        def create_module(self, spec):
            return self.loader.create_module(spec)

        def exec_module(self, module) -> None:
            self.loader.exec_module(module)
            clock_module(module)

        def __getattr__(self, name: str):  # the rest (package resources among them) as the wrapped loader has it
            return getattr(self.loader, name)

    class ClockingFinder(importlib.abc.MetaPathFinder):
        def find_spec(self, fullname, path, target=None):
            if not fullname.startswith("flashinfer_bench") or "worker" in multiprocessing.current_process().name:
                return None
            spec = importlib.machinery.PathFinder.find_spec(fullname, path)
            if spec is not None and spec.loader is not None:
                spec.loader = ClockingLoader(spec.loader)
            return spec

    sys.meta_path.insert(0, ClockingFinder())
    atexit.register(write)
