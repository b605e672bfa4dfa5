#!/usr/bin/env python3
"""Benchmark: the sign-off's HTML page of a big ledger, its weight and how long a real
browser takes to render it.

Builds, in a temporary directory, a copy of the C example whose ledger holds ``--steps``
step rows (default 10,000; with ``--distinct``, the default, every one a step of its own,
so the page lists all of them, each with its own log file and link) and an evidence capture
and accepted baseline of ``--cells`` cells each (default 1,000,000), checked by a real
``nox -s evidence``. Then ``nox -s signoff`` writes ``signoff.html`` (timed once, for
reference; bench/signoff.py is the sign-off's own bench) and ``relgate report --html
--embed-logs`` the page with log tails (its weight is printed, not judged).

Per round, interleaved: headless Chromium (the flags the tests use, a fresh profile) takes
a screenshot of the page (parse, style, layout of the whole document, paint of the first
screen, 1280×2000) and of a one-line page (the browser's own start, the anchor). The page's render
time is the difference. Goals: render ≤ 2 s, weight ≤ 2 MB without embedded logs. Prints
PASS or MISS; exits 1 only when a timed run failed.
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _big_ledger import populate  # noqa: E402

from _common import DEFAULT_ROUNDS, REPO, Bench, failed, judge, make_project, spread, timed  # noqa: E402

sys.path.insert(0, str(REPO))

GOAL_RENDER, GOAL_BYTES = 2.0, 2_000_000
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=10_000)
    ap.add_argument("--cells", type=int, default=1_000_000)
    ap.add_argument("--rounds", type=int, default=DEFAULT_ROUNDS)
    ap.add_argument("--repeated", action="store_true",
                    help="steps repeat 300 names over the runs (bench/signoff.py's ledger: the page lists 300)")
    args = ap.parse_args()
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        print("chromium is not installed: apt-get update && apt-get install -y chromium", file=sys.stderr)
        return 1
    with Bench("signoff_page"), tempfile.TemporaryDirectory(prefix="relgate-bench-page-") as tmp:
        root, env = make_project(Path(tmp), "tinyinfer")
        env = {**env, "PYTHONPATH": str(REPO)}
        home = Path(env["RELGATE_HOME"])
        t0 = time.perf_counter()
        populate(home, root, args.steps, args.cells, env, distinct=not args.repeated, write_logs=True)
        nox = [sys.executable, "-m", "nox", "-f", str(REPO / "noxfile.py")]
        wall, _, done = timed([*nox, "-s", "evidence"], env)
        if done.returncode != 0:
            return failed("nox -s evidence", done)
        out = Path(tmp) / "out"
        wall, _, done = timed([*nox, "-s", "signoff", "--", "--out", str(out)], env)
        if done.returncode not in (0, 1):
            return failed("nox -s signoff", done)
        page = out / "signoff.html"
        embedded = Path(tmp) / "embedded.html"
        _, _, done = timed([sys.executable, "-m", "relgate.cli", "--workspace", str(REPO), "report", "--html",
                            str(embedded), "--embed-logs"], env, cwd=root)
        if done.returncode != 0:
            return failed("relgate report --embed-logs", done)
        text = page.read_text()
        rows = text.count('<li id="s')
        links = len(re.findall(r'<a href="[^#]', text))
        size = page.stat().st_size
        print(f"ledger: {args.steps} steps, {args.cells} evidence cells; setup {time.perf_counter() - t0:.1f} s; "
              f"nox -s signoff (cold, with the page) {wall:.2f} s")
        print(f"page: {size:,} bytes, {rows} steps listed, {links} log links; with "
              f"--embed-logs {embedded.stat().st_size:,} bytes")
        blank = Path(tmp) / "blank.html"
        blank.write_text("<!DOCTYPE html><title>blank</title><p>blank</p>\n")
        ours, anchor, whole = [], [], []
        for r in range(args.rounds):
            times = {}
            order = [("page", page), ("blank", blank)]
            for name, target in order if r % 2 == 0 else order[::-1]:
                profile = Path(tmp) / f"profile-{r}-{name}"
                shot = Path(tmp) / f"shot-{r}-{name}.png"
                w, _, done = timed([browser, *FLAGS, f"--user-data-dir={profile}", "--window-size=1280,2000",
                                    f"--screenshot={shot}", target.as_uri()], env)
                if done.returncode != 0 or not shot.is_file():
                    return failed(f"chromium --screenshot {name}", done)
                times[name] = w
                shutil.rmtree(profile, ignore_errors=True)
            whole.append(times["page"])
            anchor.append(times["blank"])
            ours.append(times["page"] - times["blank"])
            print(f"round {r + 1}: page {times['page']:.2f} s, blank page {times['blank']:.2f} s, "
                  f"the page's own {ours[-1]:.2f} s")
        print()
        judge("signoff.html in headless Chromium: render (page − blank page, same rounds)", goal=GOAL_RENDER,
              ours=ours, mode="value", unit="s", fmt=".3f", ours_label="render")
        print(f"  whole browser process on the page {spread(whole)} s; on a blank page {spread(anchor)} s")
        judge("signoff.html weight without embedded logs", goal=GOAL_BYTES / 1e6, ours=[size / 1e6],
              mode="value", unit="MB", fmt=".3f", ours_label="bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
