"""The records and vocabularies that every layer exchanges: the bottom floor of the package.

Frozen dataclasses, enums and names, importing nothing of the package but each other (and the
standard library), so that any layer can take a type from here without loading another layer's
behaviour. One module per subject, imported by their own paths:

* `names`: the vocabularies: metrics, timers, cache modes, placement modes, the run file's schema.
* `device`: the device a measurement ran on (DeviceInfo) and its measured copy bandwidth (Peak).
* `call`: what one measured call was: its compile context, its tensor inputs, the kernels it launched.
* `baseline`: baseline entries (MetricRecord, BaselineEntry) and their keys (EntryKey, test ids).
* `result`: the result of one `kernel_bench` call (BenchResult) and its parts: verdict, comparison,
  throttling, ratio check, device memory check, the seconds of its phases (CallCost).

Functions that make, check, read or write these live in their own packages (baselines/schema.py
validates an entry, verdict/judge.py makes a Comparison, results/runfile.py writes a BenchResult).
"""
