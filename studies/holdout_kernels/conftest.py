"""Held-out suite set-up: Triton's interpreter without a GPU, before any test module imports Triton."""

from __future__ import annotations

import os

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")
