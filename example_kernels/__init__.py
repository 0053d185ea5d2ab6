"""Example kernels under test: the five ways to write GELU."""
