"""From a fresh clone to "secondbrain is up" with `make run`, as a newcomer does it (issue 46): clone the repository,
run `make run` with empty caches (pip's and npm's in a temporary folder, a data directory of its own, so nothing
installed or indexed before is reused), and time each stage by the lines it prints: the Python packages, the web
UI's npm packages and build, then `secondbrain up` (the embedded PostgreSQL initialised, the model loaded, the demo
vault indexed) until it says it is up. The system is then stopped with Ctrl-C (SIGINT), as a person would.

Packages come from the registries over this machine's network, so the figure includes their download. The ports are
moved off the defaults so a running instance does not collide. Written to docs/benchmarks.md.

    python -m bench.fresh_clone [--repo PATH]
"""

from __future__ import annotations

import argparse
import itertools
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.report import table, write_section

ROOT = Path(__file__).resolve().parents[1]
UP_TIMEOUT_SECONDS = 3600
PORTS = {"INGEST": 51051, "RETRIEVE": 51052, "CHAT": 51053, "SHIM": 51081, "GATEWAY": 51080}

# Each stage `make run` runs, in order, with the first line it prints (the Makefile echoes each recipe's commands);
# the first begins when the clone is made.
STAGES = [
    ("virtualenv and Python packages (pip, runtime only)", ""),
    ("web UI packages (npm ci)", "npm ci --prefix ui"),
    ("web UI build (vite)", "npm --prefix ui run"),
    ("secondbrain up: database, model, index of the demo vault", "secondbrain up"),
]


def run(repo: Path) -> tuple[list[tuple[str, float]], float, float]:
    """The stages' durations, the total from the clone's start to "up", and the load average at the start."""
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="secondbrain-fresh-") as scratch:
        work = Path(scratch)
        start = time.monotonic()
        subprocess.run(["git", "clone", "--quiet", str(repo), str(work / "clone")], check=True)
        cloned = time.monotonic()
        env = {
            key: value
            for key, value in os.environ.items()
            if not key.startswith(("SECONDBRAIN_", "VIRTUAL_ENV")) and key != "DATABASE_URL"
        }
        env.update(
            PIP_CACHE_DIR=str(work / "pip-cache"),
            npm_config_cache=str(work / "npm-cache"),
            XDG_DATA_HOME=str(work / "data"),
            PYTHONUNBUFFERED="1",
            **{f"SECONDBRAIN_{name}_PORT": str(port) for name, port in PORTS.items()},
        )
        process = subprocess.Popen(
            ["make", "run"],
            cwd=work / "clone",
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        begins = {STAGES[0][0]: cloned}
        up = None
        assert process.stdout is not None
        try:
            for line in process.stdout:
                now = time.monotonic()
                for label, marker in STAGES[1:]:
                    if marker in line and label not in begins:
                        begins[label] = now
                if "secondbrain is up" in line:
                    up = now
                    break
                if now - start > UP_TIMEOUT_SECONDS:
                    break
        finally:
            os.killpg(process.pid, signal.SIGINT)
            try:
                process.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        if up is None:
            sys.exit(f"make run did not say it was up; its output ended with:\n{process.stdout.read()[-3000:]}")
    marks = [*sorted(begins.items(), key=lambda mark: mark[1]), ("up", up)]
    durations = [("git clone", cloned - start)]
    durations += [(label, end - begin) for (label, begin), (_, end) in itertools.pairwise(marks)]
    return durations, up - start, load


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repo", type=Path, default=ROOT, help="the repository to clone (default: this one)")
    args = parser.parse_args()
    durations, total, load = run(args.repo)
    rows = [[label, f"{seconds:.0f} s"] for label, seconds in durations]
    rows.append(['**from the clone to "secondbrain is up"**', f"**{total / 60:.1f} min**"])
    body = (
        "`python -m bench.fresh_clone`: `git clone`, then `make run` with empty pip and npm caches and a data "
        "directory of its own (nothing installed or indexed before is reused; packages are downloaded from the "
        "registries), timed by the lines it prints until `secondbrain is up`. The stages are those `make run` runs "
        "in order; PostgreSQL's initialisation, the model's first load and indexing the demo vault are inside "
        f"the last. The machine's load average when it began: {load:.1f}.\n\n" + table(["stage", "time"], rows)
    )
    write_section("fresh-clone", "From a fresh clone to up: `make run`", body)
    print(body)


if __name__ == "__main__":
    main()
