"""The judge: one trusted process per device. It holds the run's secret, draws every input from it, runs the
reference, keeps the baselines, runs the evaluators (``bench/evaluators/``) and clocks every call of the solution
it judges. No solution code is ever imported here: it reaches a solution only through ``RemoteSolution``, a JSON
channel and a sealed output buffer (``bench/wire/judge_worker.py``)."""
