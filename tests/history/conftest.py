"""Fixtures of the history tests."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_kernelperf.history import changepoints
from pytest_kernelperf.history.store import HistoryStore

from .historykit import NO_SERVER, SERVER_URL, split_backend, with_database


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "slow: takes more than a few seconds (parallel writers, browser)")


@pytest.fixture
def stand_in_detector(monkeypatch: pytest.MonkeyPatch) -> None:
    """The history's commands use `split_backend` in place of Otava."""
    monkeypatch.setattr(changepoints, "detector_available", lambda: True)
    monkeypatch.setattr(changepoints, "split_merge_backend", split_backend)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[HistoryStore]:
    with HistoryStore(tmp_path / "history.sqlite") as db:
        yield db


@pytest.fixture
def server_url() -> Iterator[str]:
    """A database of its own on the test server, dropped afterwards."""
    if not SERVER_URL:
        pytest.skip(NO_SERVER)
    import psycopg

    name = f"kp_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(SERVER_URL, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}")
    try:
        yield with_database(SERVER_URL, name)
    finally:
        with psycopg.connect(SERVER_URL, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
