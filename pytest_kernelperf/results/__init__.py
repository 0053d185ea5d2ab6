"""Results: throughput figures, the run file, saved-run operations, transport between processes, renderers
(the result type itself is model/result.py)."""
