"""The worker: the only process where solution code runs, one solution per worker, inside the sandbox
(``worker/sandbox/``). It builds its solution, draws inputs from the seeds its judge hands it, calls the solution
and writes the outputs' bytes where the judge asks; nothing it says is taken as a verdict."""
