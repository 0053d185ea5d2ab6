"""One kernel_bench call, one stage per module, sequenced by kernel_bench.py (the facade).

`context` holds the call's shared state (CallRun) and what the host lends it (Host, Devices,
RunJudgement); `spec` the call's arguments, validated once (CallSpec); then the stages in the order
the facade runs them: `check` (the first call, against the reference), `counterpart` (fn at
--kernelperf-against's revision), `timed` (the rounds, measured again where slower, placements,
memory, profile, and the result finished with them) and `judged` (the verdict, both measurements
of a slower one judged as one, the baseline entry, the failures). A stage imports
`context` and `spec` (and `timed` the counterpart's record), never another stage or the facade.
"""
