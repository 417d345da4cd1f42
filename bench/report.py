"""Writing benchmark results into docs/benchmarks.md: one section per benchmark, with the machine and the date.

Each benchmark owns the text between `<!-- bench:NAME -->` and `<!-- /bench:NAME -->`; re-running it replaces only
that section, so results of different benchmarks (run on different days) live side by side.
"""

from __future__ import annotations

import os
import platform
import re
import subprocess
import time
from datetime import UTC, datetime
from pathlib import Path

import psutil

DOC = Path(__file__).resolve().parent.parent / "docs" / "benchmarks.md"

HEADER = """# Benchmarks

Produced by `make bench` (the scripts are in `bench/`). Each section says on which machine and when it was run.
Numbers are wall-clock on a shared 2-core machine: compare them with each other, not with other hardware.
"""


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        pages = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        memory = f"{pages / 2**30:.0f} GiB"
    except (ValueError, OSError):
        memory = "unknown memory"
    return f"{cpu}, {os.cpu_count()} cores, {memory}, Python {platform.python_version()}, {platform.system()}"


def write_section(name: str, title: str, body: str) -> None:
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    section = (
        f"<!-- bench:{name} -->\n## {title}\n\nRun {stamp} on {machine()}.\n\n{body.strip()}\n<!-- /bench:{name} -->"
    )
    text = DOC.read_text(encoding="utf-8") if DOC.exists() else HEADER
    pattern = re.compile(rf"<!-- bench:{re.escape(name)} -->.*?<!-- /bench:{re.escape(name)} -->", re.DOTALL)
    text = pattern.sub(lambda _: section, text) if pattern.search(text) else text.rstrip() + "\n\n" + section + "\n"
    DOC.parent.mkdir(parents=True, exist_ok=True)
    DOC.write_text(text, encoding="utf-8")


def table(header: list[str], rows: list[list[object]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def peak_rss_while(child: subprocess.Popen[str], interval: float) -> int:
    """The highest RSS (bytes) polled every `interval` seconds while `child` runs; returns once it has exited."""
    peak = 0
    watched = psutil.Process(child.pid)
    while child.poll() is None:
        try:
            peak = max(peak, watched.memory_info().rss)
        except psutil.Error:
            break
        time.sleep(interval)
    return peak
