"""Profiles that explain a regression: capture, kernel inventory, generated-code hashes, environment
differences.
"""
