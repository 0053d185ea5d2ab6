"""The code of another git revision, loaded into this process beside the code under test.

`--kernelperf-against REF` times each kernel against the same function at REF in the same process
(kernel_bench.py): `source` exports REF's files, `loader` finds fn's counterpart among them. Only
the standard library and git: no torch, no pytest.
"""
