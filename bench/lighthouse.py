"""Lighthouse on the web UI as a phone gets it: the built UI served by the real stack (`secondbrain up` on the demo
vault: Envoy, the shim, the three services), Lighthouse's mobile emulation (a mid-range phone on a slow 4G link,
simulated), Debian's Chromium headless. Writes the accessibility and performance scores of each page, the audits
that fail, and whether Chrome finds the app installable, into docs/benchmarks.md.

    .venv/bin/python -m bench.lighthouse [--no-build] [--keep-reports DIR]

Lighthouse 12 has no PWA category any more, so installability is Chrome's own verdict, asked over the DevTools
protocol (`Page.getInstallabilityErrors`, the check behind the browser's install prompt) in a Chromium profile of its
own, once the service worker controls the page, with the manifest as Chrome parsed it (`Page.getAppManifest`).

Lighthouse (npm `lighthouse@12.2.3`; 13 needs Node 22) lives in bench/lighthouse/, installed from its lock file the
first time this runs, so `make setup` and `make test` never wait for it. The stack runs on free ports with a data
directory of its own (a fresh embedded PostgreSQL), never DATABASE_URL.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil
from playwright.async_api import async_playwright

from bench.chat import free_port
from bench.report import table, write_section
from secondbrain.config import default_data_dir
from tests.ui.chromium import CHROMIUM
from tests.ui.chromium import CHROMIUM_FLAGS as BROWSER_TEST_FLAGS

ROOT = Path(__file__).resolve().parents[1]
LIGHTHOUSE_DIR = ROOT / "bench" / "lighthouse"
LIGHTHOUSE = LIGHTHOUSE_DIR / "node_modules" / ".bin" / "lighthouse"
VAULT = ROOT / "demo" / "vault"
# The browser tests' flags, headless.
CHROMIUM_FLAGS = ["--headless=new", *BROWSER_TEST_FLAGS]
# What a phone opens: the search page (the start_url), browsing, a note, the chat.
PAGES = {
    "search (/)": "/",
    "browse": "/browse",
    "a note": "/note/Projects/Kitchen%20Renovation.md",
    "chat": "/chat",
}
CATEGORIES = ("performance", "accessibility", "best-practices")
TARGETS = {"performance": 90, "accessibility": 95}
METRICS = {
    "first-contentful-paint": "FCP",
    "largest-contentful-paint": "LCP",
    "total-blocking-time": "TBT",
    "cumulative-layout-shift": "CLS",
    "speed-index": "SI",
}
UP_TIMEOUT_SECONDS = 300


@dataclass
class Report:
    page: str
    scores: dict[str, int]
    metrics: dict[str, str]
    failing: dict[str, list[str]]


def ensure_lighthouse() -> None:
    if not LIGHTHOUSE.exists():
        subprocess.run(
            ["npm", "ci", "--prefix", str(LIGHTHOUSE_DIR), "--no-audit", "--no-fund", "--loglevel=error"], check=True
        )


def lighthouse_version() -> str:
    package = json.loads((LIGHTHOUSE_DIR / "node_modules" / "lighthouse" / "package.json").read_text())
    return str(package["version"])


def chromium_version() -> str:
    return subprocess.run([CHROMIUM, "--version"], capture_output=True, text=True, check=True).stdout.strip()


@contextlib.asynccontextmanager
async def running_stack(data_dir: Path) -> AsyncIterator[str]:
    """`secondbrain up --vault demo/vault` on free ports; yields Envoy's URL once it says it is up."""
    ports = {name: free_port() for name in ("ingest", "retrieve", "chat", "shim", "gateway")}
    env = {key: value for key, value in os.environ.items() if not key.startswith("SECONDBRAIN_")}
    env.pop("DATABASE_URL", None)
    env.update({f"SECONDBRAIN_{name.upper()}_PORT": str(port) for name, port in ports.items()})
    env["SECONDBRAIN_DATA_DIR"] = str(data_dir)
    # The local model's ONNX export, made once on this machine, is reused rather than made again.
    models = default_data_dir() / "models"
    if models.is_dir():
        env["SECONDBRAIN_MODEL_CACHE_DIR"] = str(models)
    env["SECONDBRAIN_UI_DIR"] = str(ROOT / "ui" / "dist")
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "secondbrain", "up", "--vault", str(VAULT), "--log-format", "json",
        env=env, stderr=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.DEVNULL,
    )  # fmt: skip
    tree: list[psutil.Process] = []
    try:
        assert process.stderr is not None
        seen: list[str] = []
        async with asyncio.timeout(UP_TIMEOUT_SECONDS):
            while True:
                line = (await process.stderr.readline()).decode(errors="replace")
                if not line:
                    raise RuntimeError("secondbrain up stopped before it was up:\n" + "".join(seen[-20:]))
                seen.append(line)
                if "secondbrain is up" in line:
                    break
        tree = psutil.Process(process.pid).children(recursive=True)
        # Read the rest, so a full pipe never stops it.
        drain = asyncio.create_task(_drain(process.stderr))
        yield f"http://127.0.0.1:{ports['gateway']}"
        drain.cancel()
    finally:
        if process.returncode is None:
            process.send_signal(signal.SIGINT)
            try:
                await asyncio.wait_for(process.wait(), 30)
            except TimeoutError:
                process.kill()
                await process.wait()
        for child in tree:
            with contextlib.suppress(psutil.NoSuchProcess):
                child.kill()


async def _drain(stream: asyncio.StreamReader) -> None:
    while await stream.readline():
        pass


async def installability(url: str, profile: Path) -> tuple[list[str], list[str]]:
    """Chrome's reasons the app at `url` cannot be installed (none: it can), and its manifest's parse errors."""
    async with async_playwright() as playwright:
        context = await playwright.chromium.launch_persistent_context(
            profile, executable_path=CHROMIUM, args=CHROMIUM_FLAGS[1:], viewport={"width": 412, "height": 823}
        )
        try:
            page = await context.new_page()
            await page.goto(url)
            await page.wait_for_function("() => navigator.serviceWorker.controller !== null", timeout=30_000)
            cdp = await context.new_cdp_session(page)
            errors = (await cdp.send("Page.getInstallabilityErrors"))["installabilityErrors"]
            manifest = await cdp.send("Page.getAppManifest")
            return [error["errorId"] for error in errors], [error["message"] for error in manifest["errors"]]
        finally:
            await context.close()


def run_lighthouse(url: str, output: Path) -> dict[str, Any]:
    subprocess.run(
        [
            str(LIGHTHOUSE), url,
            "--output=json", f"--output-path={output}", "--quiet",
            f"--only-categories={','.join(CATEGORIES)}",
            # The default: mobile emulation (Moto G Power class), simulated slow 4G and a 4x slower CPU.
            "--form-factor=mobile",
            f"--chrome-path={CHROMIUM}",
            f"--chrome-flags={' '.join(CHROMIUM_FLAGS)}",
        ],
        check=True,
        timeout=300,
    )  # fmt: skip
    return json.loads(output.read_text())


def summarise(page: str, result: dict[str, Any]) -> Report:
    scores = {name: round(result["categories"][name]["score"] * 100) for name in CATEGORIES}
    audits = result["audits"]
    metrics = {label: audits[key]["displayValue"] for key, label in METRICS.items()}
    failing: dict[str, list[str]] = {}
    for name in CATEGORIES:
        for ref in result["categories"][name]["auditRefs"]:
            audit = audits[ref["id"]]
            # Scored audits that did not pass (a metric counts when it scores under 0.9, Lighthouse's "good"), and
            # in performance the opportunities and diagnostics it flags, which say why the metrics are what they are.
            flagged = ref["weight"] > 0 or (
                name == "performance" and audit.get("details", {}).get("type") == "opportunity"
            )
            if flagged and audit["score"] is not None and audit["score"] < 0.9:
                shown = audit.get("displayValue")
                failing.setdefault(name, []).append(f"`{ref['id']}`" + (f" ({shown})" if shown else ""))
    return Report(page, scores, metrics, failing)


def render_section(
    reports: list[Report], installable: tuple[list[str], list[str]], url: str, spread: dict[str, list[int]]
) -> str:
    errors, manifest_errors = installable
    verdict = (
        "**installable**: Chrome reports no installability error (`Page.getInstallabilityErrors` is empty), the "
        "service worker controls the page, and the manifest parses without error"
        if not errors and not manifest_errors
        else f"**not installable**: {', '.join(errors + manifest_errors)}"
    )
    rows = [
        [report.page, *(report.scores[name] for name in CATEGORIES), *report.metrics.values()] for report in reports
    ]
    lines = [
        f"Lighthouse {lighthouse_version()} (`python -m bench.lighthouse`), its default mobile emulation (simulated "
        f"slow 4G, 4x CPU slowdown), {chromium_version()} headless, against `secondbrain up` on the demo vault "
        f"(the built UI through Envoy, {url.split(':')[0]}://127.0.0.1, a secure context).",
        "",
        f"Install: {verdict}.",
        "",
        f"Each page's figures are its run of median performance of {len(next(iter(spread.values())))}; the "
        "performance scores of all its runs: "
        + "; ".join(f"{page} {', '.join(map(str, scores))}" for page, scores in spread.items())
        + ". (Lighthouse simulates the phone's network, not its CPU: blocking time is measured on this machine, "
        "shared with other work, and slowed 4x.)",
        "",
        table(["page", *CATEGORIES, *METRICS.values()], rows),
        "",
        f"Targets: performance >= {TARGETS['performance']}, accessibility >= {TARGETS['accessibility']}.",
    ]
    misses = [
        f"- {report.page}, {name} {report.scores[name]}: {', '.join(report.failing.get(name, [])) or 'no single audit'}"
        for report in reports
        for name, target in TARGETS.items()
        if report.scores[name] < target
    ]
    lines += ["", "Below target, and the audits that fail:", *misses] if misses else ["", "Every page meets both."]
    others = [
        f"- {report.page}, {name}: {', '.join(audits)}"
        for report in reports
        for name, audits in report.failing.items()
        if report.scores[name] >= TARGETS.get(name, 0)
    ]
    if others:
        lines += ["", "Audits that fail on pages that meet the target:", *others]
    return "\n".join(lines)


async def measure(args: argparse.Namespace) -> None:
    spread: dict[str, list[int]] = {}
    with tempfile.TemporaryDirectory(prefix="secondbrain-lighthouse-") as scratch:
        work = Path(scratch)
        async with running_stack(work / "data") as url:
            installable = await installability(url, work / "profile")
            reports = []
            for page, path in PAGES.items():
                # The run of median performance, as Lighthouse advises: one run on a shared machine is noise.
                runs = [
                    await asyncio.to_thread(run_lighthouse, url + path, work / "report.json") for _ in range(args.runs)
                ]
                runs.sort(key=lambda run: run["categories"]["performance"]["score"])
                result = runs[len(runs) // 2]
                spread[page] = [round(run["categories"]["performance"]["score"] * 100) for run in runs]
                if args.keep_reports:
                    args.keep_reports.mkdir(parents=True, exist_ok=True)
                    name = page.split()[0].replace("/", "") or "search"
                    (args.keep_reports / f"{name}.json").write_text(json.dumps(result))
                reports.append(summarise(page, result))
                print(page, reports[-1].scores, reports[-1].metrics, flush=True)
    body = render_section(reports, installable, url, spread)
    write_section("lighthouse", "Lighthouse: the web UI on a phone", body)
    print(body)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--no-build", action="store_true", help="use ui/dist as it is")
    parser.add_argument("--keep-reports", type=Path, help="also keep Lighthouse's JSON reports here")
    parser.add_argument("--runs", type=int, default=3, help="Lighthouse runs per page; the median is reported")
    args = parser.parse_args()
    if not args.no_build:
        subprocess.run(["npm", "--prefix", str(ROOT / "ui"), "run", "--silent", "build"], check=True)
    ensure_lighthouse()
    asyncio.run(measure(args))


if __name__ == "__main__":
    main()
