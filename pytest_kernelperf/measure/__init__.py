"""Measurement: timers and sampling, the device and its health, GPU pinning and locks, sticky faults,
peak bandwidth.
"""
