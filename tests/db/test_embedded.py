"""The embedded server's list of the processes that use it (`<pgdata>/.handle_pids.json`), kept readable and true."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from secondbrain.db.embedded import forget_dead_handles


def _dead_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


@pytest.mark.parametrize("text", ["", "[12, 3", "{}", "null"])
def test_an_unreadable_list_left_by_a_kill_mid_write_is_started_again(tmp_path: Path, text: str) -> None:
    # The wheel reads this file as it starts and fails outright on bad JSON: `up` could not start again.
    handles = tmp_path / ".handle_pids.json"
    handles.write_text(text)
    assert forget_dead_handles(tmp_path) == []
    assert json.loads(handles.read_text()) == []


def test_dead_pids_are_dropped_and_live_ones_kept(tmp_path: Path) -> None:
    handles = tmp_path / ".handle_pids.json"
    handles.write_text(json.dumps([os.getpid(), _dead_pid()]))
    assert forget_dead_handles(tmp_path) == [os.getpid()]
    assert json.loads(handles.read_text()) == [os.getpid()]
    assert not list(tmp_path.glob("*.partial"))


def test_no_list_is_no_users(tmp_path: Path) -> None:
    assert forget_dead_handles(tmp_path) == []
    assert not (tmp_path / ".handle_pids.json").exists()
