"""Time report.html in headless Chromium for a paper-sized sweep.

A synthetic result store of 600 units (5 datasets x 4 noise rates x 6 methods x 5 splits)
holding 4,200 result rows (7 metrics) is reported with a reference method, Holm correction
and every figure; the page is then opened from file:// in headless Chromium (Debian's
``chromium`` and ``chromium-driver``, offline) several times, beside a trivial page in the
same browser. Times are read in the page with ``performance.now()``:

- build: from the start of DOMContentLoaded to the end of the script that builds every
  table (the page's own ``window.pmlbenchReport.built``);
- ready: from navigation start to that moment (includes reading and parsing the file);
- load: navigation start to the end of the load event (figures decoded).

    python benchmarks/bench_report_html.py [--repeat 7] [--no-plots] [--keep DIR]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

# benchmarks/ is on sys.path: scripts run from it
from synthetic_results import DATASETS, METHODS, RATES, SPLITS, unit_rows

from pmlbench.report import ReportOptions, build_report, write_report
from pmlbench.runner.outputs import package_versions
from pmlbench.runner.store import ResultStore
from pmlbench.runner.units import content_key

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
FLAGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-dev-shm-usage",
    "--host-resolver-rules=MAP * ~NOTFOUND",
    "--window-size=1400,1000",
]
TRIVIAL = """<!DOCTYPE html><html><head><meta charset="utf-8"><title>trivial</title></head>
<body><p>trivial</p><script>
document.addEventListener("DOMContentLoaded", function () {
  var t0 = performance.now();
  document.body.appendChild(document.createElement("table"));
  var t1 = performance.now();
  window.pmlbenchReport = {started: t0, built: t1, buildMs: t1 - t0};
  document.documentElement.setAttribute("data-ready", "true");
});
</script></body></html>
"""
TIMES = """
const nav = performance.getEntriesByType('navigation')[0];
const r = window.pmlbenchReport;
return {build: r.built - nav.domContentLoadedEventStart, ready: r.built,
        load: nav.loadEventEnd, cells: document.querySelectorAll('td').length};
"""


def write_store(root: Path, seed: int = 0) -> tuple[int, int]:
    """One store record per (dataset, rate, method, split); returns (units, rows)."""
    rng = np.random.default_rng(seed)
    store = ResultStore(root)
    run = {"versions": package_versions(), "git_commit": None, "run_dir": None}
    units = rows_written = 0
    for dataset in DATASETS:
        for rate in RATES:
            for method in METHODS:
                for split in range(SPLITS):
                    unit = {
                        "dataset": {"name": dataset},
                        "noise": {"name": "uniform", "rate": rate},
                        "method": {"name": method},
                        "seed": 0,
                        "split": split,
                    }
                    rows = unit_rows(rng, dataset, rate, method, split)
                    store.save(
                        {
                            "schema": 1,
                            "key": content_key(unit),
                            "status": "done",
                            "unit": unit,
                            "records": rows,
                            "split": {
                                "index": split,
                                "values": {row["metric"]: row["value"] for row in rows},
                            },
                            "dataset": {"name": dataset, "n": 1000, "d": 100, "l": 20},
                            "noise": "uniform",
                            "run": {**run, "unix_time": time.time()},
                        }
                    )
                    units += 1
                    rows_written += len(rows)
    return units, rows_written


def browser(profile: Path):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in [*FLAGS, f"--user-data-dir={profile}"]:
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.execute_cdp_cmd("Network.enable", {})
    driver.execute_cdp_cmd(
        "Network.emulateNetworkConditions",
        {"offline": True, "latency": 0, "downloadThroughput": 0, "uploadThroughput": 0},
    )
    return driver


def measure(driver, page: Path) -> dict[str, float]:
    from selenium.webdriver.support.ui import WebDriverWait

    driver.get("about:blank")
    driver.get(page.resolve().as_uri())
    WebDriverWait(driver, 60).until(
        lambda d: d.execute_script(
            "return document.documentElement.dataset.ready === 'true' && "
            "performance.getEntriesByType('navigation')[0].loadEventEnd > 0"
        )
    )
    return driver.execute_script(TIMES)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=7, help="page loads per page (7)")
    parser.add_argument("--no-plots", action="store_true", help="a page without figures")
    parser.add_argument("--keep", type=Path, help="write the store, report and pages here")
    args = parser.parse_args()
    if not (shutil.which(CHROMIUM) and shutil.which(CHROMEDRIVER)):
        raise SystemExit("needs Debian's chromium and chromium-driver (apt-get install them)")
    with tempfile.TemporaryDirectory() as tmp:
        root = args.keep or Path(tmp)
        units, rows = write_store(root / "store")
        start = time.perf_counter()
        report = build_report(
            [root / "store"],
            ReportOptions(reference="pml3er", correction="holm", plots=not args.no_plots),
        )
        built = time.perf_counter()
        write_report(report, root / "report")
        written = time.perf_counter()
        page = root / "report" / "report.html"
        trivial = root / "trivial.html"
        trivial.write_text(TRIVIAL, encoding="utf-8")
        driver = browser(root / "profile")
        try:
            results: dict[str, list[dict[str, float]]] = {"report.html": [], "trivial": []}
            for _ in range(args.repeat):
                results["report.html"].append(measure(driver, page))
                results["trivial"].append(measure(driver, trivial))
        finally:
            driver.quit()
        size = page.stat().st_size
    print(f"{units} units, {rows} result rows; build_report {built - start:.2f} s, ", end="")
    print(f"write_report (plots={not args.no_plots}) {written - built:.2f} s")
    print(f"report.html: {size / 1e6:.2f} MB")
    print(f"median of {args.repeat} loads in headless Chromium (ms):")
    print("| page | table cells | build (DOMContentLoaded -> tables built) | ready | load |")
    print("|---|---|---|---|---|")
    for name, runs in results.items():
        med = {k: statistics.median(r[k] for r in runs) for k in ("build", "ready", "load")}
        print(
            f"| {name} | {int(runs[0]['cells'])} | {med['build']:.1f} | {med['ready']:.1f} "
            f"| {med['load']:.1f} |"
        )


if __name__ == "__main__":
    main()
