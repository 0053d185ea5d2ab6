"""Results: the result type, the run file, saved-run operations, transport between processes, renderers."""
