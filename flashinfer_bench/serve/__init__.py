"""``flashinfer-bench serve``: one always-on judge over a trace set, shared by many callers over HTTP.

app.py (routes) and tasks.py (task routes) on FastAPI; store.py keeps tasks and verdicts in SQLite;
scheduler.py hands pending evaluations to engine.py, which evaluates them as ``run`` does, through one warm
runner. Needs the ``serve`` extra (FastAPI, uvicorn). docs/serve.md describes the service.
"""
