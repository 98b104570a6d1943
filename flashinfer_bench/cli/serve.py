"""`flashinfer-bench serve` (an always-on judge over HTTP) and `flashinfer-bench submit` (its client).

`serve` takes the flags of `run` that shape an evaluation, as `run` defines them (copied from its parser), so
one configuration means the same in both. docs/serve.md describes the service.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from flashinfer_bench.serve.settings import Settings

#: `run`'s flags that shape an evaluation, taken over by `serve`.
EVALUATION_FLAGS = ("config", "rtol", "atol", "iterations", "warmup_runs", "num_trials", "timeout",
                    "use_isolated_runner", "ray_address", "log_level")
EXIT_BAD_INPUT = 2
EXIT_NOT_ALL_PASSED = 1
#: Under the trace set's folder unless --store says otherwise.
DEFAULT_STORE = Path(".serve") / "store.sqlite3"


def add_commands(commands: argparse._SubParsersAction, run: argparse.ArgumentParser) -> None:
    serve = commands.add_parser("serve", help="serve one trace set's judge over HTTP (docs/serve.md)")
    serve.add_argument("--local", required=True, metavar="PATH", help="the trace-set folder to serve")
    for action in run._actions:
        if action.dest in EVALUATION_FLAGS:
            serve._add_action(action)
    serve.set_defaults(definitions=None, solutions=None)
    serve.add_argument("--host", default="127.0.0.1", help="address to bind (default: 127.0.0.1)")
    serve.add_argument("--port", type=int, default=8000, help="port to bind (default: 8000)")
    serve.add_argument("--token-file", metavar="FILE", help="accepted tokens, one per line (required unless --no-auth)")
    serve.add_argument("--no-auth", action="store_true", help="accept every caller: only with a loopback --host")
    serve.add_argument("--store", metavar="FILE", help=f"the SQLite store (default: PATH/{DEFAULT_STORE})")
    serve.add_argument("--batch-size", type=int, default=64, help="evaluations handed to the runner at once")
    serve.add_argument("--max-queued-per-token", type=int, default=2000,
                       help="evaluations one token may have queued (beyond: 429)")
    serve.add_argument("--max-queued", type=int, default=20000, help="evaluations queued in all (beyond: 503)")
    serve.add_argument("--rate-limit", type=float, default=600.0, metavar="PER_MINUTE",
                       help="submissions per token per minute (beyond: 429)")
    serve.add_argument("--max-wait", type=float, default=3600.0, metavar="SECONDS",
                       help="longest long poll or /verify wait")
    for name, default, text in (("passed", 1.0, "reward of a PASSED evaluation"),
                                ("speedup-weight", 1.0, "weight of log2(speed-up) for PASSED"),
                                ("speedup-cap", 16.0, "speed-ups above this count as this"),
                                ("incorrect", 0.0, "reward of an INCORRECT_* evaluation"),
                                ("error", 0.0, "reward of COMPILE_ERROR, RUNTIME_ERROR, TIMEOUT or no solution")):
        serve.add_argument(f"--reward-{name}", type=float, default=default, help=f"/verify: {text} (default: {default:g})")

    submit = commands.add_parser("submit", help="submit solutions to a `flashinfer-bench serve` and wait for traces")
    submit.add_argument("solutions", nargs="+", metavar="SOLUTION.json", help="solution JSON file(s)")
    submit.add_argument("--server", default=os.environ.get("FLASHINFER_BENCH_SERVER", "http://127.0.0.1:8000"),
                        help="the server's URL (default: $FLASHINFER_BENCH_SERVER, else http://127.0.0.1:8000)")
    submit.add_argument("--token-file", metavar="FILE", help="the token, on its first line (default: "
                        "$FLASHINFER_BENCH_TOKEN)")
    submit.add_argument("--workloads", nargs="+", metavar="UUID", help="only these workloads (default: all)")
    submit.add_argument("--priority", type=int, default=0, help="orders your own tasks; higher first")
    submit.add_argument("--fresh", action="store_true", help="evaluate again even if a stored verdict exists")
    submit.add_argument("--timeout", type=float, metavar="SECONDS", help="stop waiting after this long")
    submit.add_argument("--output", metavar="FILE", help="append the traces to this JSONL file")


def main(args: argparse.Namespace) -> int:
    return command_serve(args) if args.command == "serve" else command_submit(args)


def _error(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return EXIT_BAD_INPUT


def command_serve(args: argparse.Namespace) -> int:
    from flashinfer_bench.serve.settings import is_loopback

    if args.no_auth and not is_loopback(args.host):
        return _error(f"--no-auth: only with a loopback --host (127.0.0.1, ::1, localhost), got '{args.host}'")
    if not args.no_auth and not args.token_file:
        return _error("authentication is on: give --token-file FILE (one token per line), or --no-auth on a "
                      "loopback --host")
    try:
        import fastapi  # noqa: F401
        import uvicorn
    except ImportError as exc:
        return _error(f"`serve` needs the serve extra ({exc.name} is missing): pip install 'flashinfer-bench[serve]'")
    logging.basicConfig(level=args.log_level, format="%(levelname)s %(name)s: %(message)s")
    from flashinfer_bench.cli.common import load_config, report_problems
    from flashinfer_bench.data import TraceSet, TraceSetError

    try:
        config = load_config(args)
        if not config.cluster_address():
            from flashinfer_bench.bench.runner.server import start_worker_server

            start_worker_server()
        settings = _settings(args)
        trace_set = TraceSet.from_path(args.local, load_traces=False)
    except (TraceSetError, ValueError) as exc:
        return _error(str(exc))
    if report_problems(trace_set.problems):
        print("warning: the files above are not served; the rest is", file=sys.stderr)
    from flashinfer_bench.serve.app import create_app
    from flashinfer_bench.serve.engine import Engine
    from flashinfer_bench.serve.store import Store

    store_path = Path(args.store) if args.store else Path(args.local) / DEFAULT_STORE
    app = create_app(settings, Store(store_path), Engine(trace_set, config))
    auth = (f"{len(settings.tokens)} token(s) from {args.token_file}" if settings.tokens is not None
            else "OFF (--no-auth): every caller on this machine is accepted")
    print(f"serving {trace_set.root} ({len(trace_set.definitions)} definitions) on http://{args.host}:{args.port}\n"
          f"  authentication: {auth}\n  store: {store_path}", file=sys.stderr, flush=True)
    uvicorn.run(app, host=args.host, port=args.port, log_level=args.log_level.lower(), timeout_graceful_shutdown=5)
    return 0


def _settings(args: argparse.Namespace) -> Settings:
    from flashinfer_bench.serve.settings import Limits, RewardConfig, Settings, read_tokens

    limits = Limits(queued_per_token=args.max_queued_per_token, queued_total=args.max_queued,
                    submissions_per_minute=args.rate_limit, max_wait_s=args.max_wait)
    reward = RewardConfig(passed=args.reward_passed, speedup_weight=args.reward_speedup_weight,
                          speedup_cap=args.reward_speedup_cap, incorrect=args.reward_incorrect,
                          error=args.reward_error)
    tokens = None if args.no_auth else read_tokens(args.token_file)
    return Settings(tokens=tokens, limits=limits, reward=reward, batch_size=args.batch_size)


def command_submit(args: argparse.Namespace) -> int:
    from flashinfer_bench.client import Client, ServeError
    from flashinfer_bench.client.client import solution_json
    from flashinfer_bench.serve.settings import token_lines

    token = None
    if args.token_file:
        try:
            found = token_lines(Path(args.token_file).read_text())
        except OSError as exc:
            return _error(f"{args.token_file}: cannot be read: {exc.strerror}")
        if not found:
            return _error(f"{args.token_file}: expected a token on its first line that is not a # comment")
        token = found[0][1]
    requests = []
    for path in args.solutions:
        try:
            requests.append({"solution": solution_json(path), "workload_uuids": args.workloads,
                             "priority": args.priority, "fresh": args.fresh})
        except (OSError, ValueError) as exc:
            return _error(f"{path}: not a readable solution JSON file: {exc}")
    passed = True
    try:
        with Client(args.server, token) as client:
            submitted = client.submit_batch(requests)
            tasks = client.wait([s.task_id for s in submitted], args.timeout)
    except ServeError as exc:
        return _error(f"{args.server}: {exc}")
    except ImportError as exc:
        return _error(str(exc))
    except Exception as exc:  # noqa: BLE001 - httpx's transport errors, after the client's retries
        return _error(f"{args.server}: cannot be reached: {type(exc).__name__}: {exc}")
    output = open(args.output, "a") if args.output else None  # noqa: SIM115 - closed below
    try:
        for task in tasks:
            print(f"{task['solution']}: {task['status']} ({task['progress']['done']}/{task['progress']['total']} "
                  f"done, {task['progress']['cached']} from stored verdicts)"
                  + (f": {task['error']}" if task.get("error") else ""))
            passed &= task["status"] == "completed"
            for trace in task.get("traces") or []:
                evaluation = trace["evaluation"]
                performance = evaluation.get("performance") or {}
                speed = (f" {performance['latency_ms']:.4f} ms ({performance['speedup_factor']:.2f}x)"
                         if performance else "")
                print(f"  {trace['workload']['uuid']}: {evaluation['status']}{speed}")
                passed &= evaluation["status"] == "PASSED"
                if output is not None:
                    import json

                    output.write(json.dumps(trace) + "\n")
    finally:
        if output is not None:
            output.close()
    return 0 if passed else EXIT_NOT_ALL_PASSED
