"""Benchmark: the dashboard for 100 runs x 300 tests. Prints build time and page load time.

    python bench/bench_dashboard.py [--runs 100] [--tests 300] [--repeat 3]

* build: `wincon dashboard` on the runs (read every started/finished/JUnit file, write the site), best of N;
* load: headless Debian Chromium (Playwright) from navigation until the grid, the area, limitation and
  run views are rendered (the page sets body[data-ready]), best of N; also the page's own render time.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from wincon.results.dashboard import build

# The synthetic history and the headless browser are the project's test support code, not wincon's.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.support import browser as chromium  # noqa: E402
from tests.support import synthetic  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--tests", type=int, default=300)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "results"
        started = time.perf_counter()
        synthetic.history(root, runs=args.runs, tests=args.tests)
        print(f"setup: wrote {args.runs} runs x {args.tests} tests in {time.perf_counter() - started:.2f}s")

        site = Path(tmp) / "site"
        build_times = []
        for _ in range(args.repeat):
            started = time.perf_counter()
            index, errors, shown = build([root], site)
            build_times.append(time.perf_counter() - started)
            assert not errors and shown == args.runs
        size = sum(p.stat().st_size for p in site.iterdir())
        print(
            f"build: best {min(build_times):.3f}s, median {statistics.median(build_times):.3f}s "
            f"({shown} runs, {args.tests} tests, site {size / 1024:.0f} KiB)"
        )

        from playwright.sync_api import sync_playwright

        with sync_playwright() as playwright:
            browser = chromium.launch(playwright)
            load_times, render_times = [], []
            for _ in range(args.repeat):
                page = browser.new_page(viewport={"width": 1400, "height": 900})
                errors = []
                page.on("pageerror", lambda exc, errors=errors: errors.append(str(exc)))
                started = time.perf_counter()
                page.goto(index.as_uri())
                page.wait_for_function("document.body.dataset.ready === '1'", timeout=60_000)
                load_times.append(time.perf_counter() - started)
                render_times.append(float(page.evaluate("document.body.dataset.renderMs")) / 1000)
                cells = page.locator("#grid td.c").count()
                assert not errors, errors
                assert cells == args.runs * args.tests, cells
                page.close()
            browser.close()
        print(
            f"page load: best {min(load_times):.3f}s, median {statistics.median(load_times):.3f}s "
            f"(navigation to all views rendered; page's own clock {min(render_times):.3f}s; {cells} grid cells)"
        )


if __name__ == "__main__":
    main()
