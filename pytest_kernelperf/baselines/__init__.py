"""Baselines: the stored measurements that runs are judged against.

One module per job, imported by their own paths:

* `schema`: the one validation of an entry (model/baseline.py's MetricRecord, BaselineEntry) as
  plain data, used by every reader (YAML files, run JSON files, data from other processes).
* `yaml_io`: the baseline file format: a strict YAML loader, the file layout, a deterministic dumper.
* `store`: where each test's entries live (file_for), and the store that reads, stages and writes
  them at the end of an update (never over a file it cannot read, never after an interrupt).
* `unused`: which entries no collected test can produce.
"""
