"""report.html: a self-contained page, checked in headless Chromium from file:// offline.

The browser tests drive Debian's ``chromium`` through its ``chromium-driver``
(/usr/bin/chromedriver, given to selenium explicitly: Selenium Manager never runs and
nothing is downloaded). Without them the tests skip and say what to install. The page is
built from a real multirun (two methods, two datasets, two noise rates, plus a method that
fails on every unit and a run killed before its results) and its tables are compared with
table2.csv and wtl.csv of the same report.
"""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pandas as pd
import pytest

from pmlbench.cli.main import main as cli_main
from pmlbench.report import ReportOptions, build_report, load_results, write_report
from pmlbench.report.html import ASSETS, asset
from pmlbench.report.markdown_html import markdown_html
from pmlbench.report.provenance import display_command
from pmlbench.report.render import metric_name
from tests.helpers import installed_wheel  # noqa: F401 - builds and installs the wheel

CHROMEDRIVER = Path("/usr/bin/chromedriver")
CHROMIUM = Path(shutil.which("chromium") or "/usr/bin/chromium")
HAS_MPL = importlib.util.find_spec("matplotlib") is not None
BROWSER_MISSING = (
    "headless browser tests need Debian's chromium and chromium-driver "
    "(apt-get install chromium chromium-driver) and selenium (pip install -e '.[test]')"
)
CHROME_FLAGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-dev-shm-usage",
    # any name lookup or proxied request fails: the page must need none
    "--host-resolver-rules=MAP * ~NOTFOUND",
    "--proxy-server=http://127.0.0.1:9",
    "--window-size=1400,1000",
]
REFERENCE = "mlknn"
DIGITS = 3


def _pmlbench(args: list[str], cwd: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pmlbench", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode in (0, 1), done.stderr[-3000:]


def real_sweep(root: Path, sweep: list[str], store: Path, name: str) -> Path:
    """Run a real Hydra multirun (``python -m pmlbench -m ...``) into ``store``."""
    sweep_dir = root / name
    _pmlbench(
        [
            "-m",
            *sweep,
            "protocol.n_splits=2",
            f"results_store={store}",
            "cache_dir=null",
            "quiet=true",
            f"hydra.sweep.dir={sweep_dir}",
        ],
        cwd=root,
    )
    return sweep_dir


@pytest.fixture(scope="module")
def sweep(tmp_path_factory) -> dict[str, Path]:
    """mlknn and ridge on genbase and medical at noise rates 0.5 and 1.0 (8 runs, 2 splits
    each) in a result store, an external program that fails on both of its units, and a run
    directory killed after its run record but before its results."""
    root = tmp_path_factory.mktemp("sweep")
    store = root / "store"
    runs = real_sweep(
        root,
        ["method=mlknn,ridge", "dataset=genbase,medical", "noise.rate=0.5,1.0"],
        store,
        "multirun",
    )
    real_sweep(
        root,
        ["method=external", '+method.command="false {train} {test} {out}"', "dataset=genbase"],
        store,
        "failing",
    )
    killed = root / "killed" / "0_ridge_medical"
    killed.mkdir(parents=True)
    shutil.copy(next(runs.glob("*/run.json")), killed / "run.json")
    return {"root": root, "store": store, "runs": runs, "killed": killed.parent}


@pytest.fixture(scope="module")
def report_dir(sweep) -> Path:
    out = sweep["root"] / "report"
    args = ["report", str(sweep["store"]), str(sweep["killed"]), "--out", str(out)]
    args += ["--reference", REFERENCE, "--bayesian", "--quiet"]
    if not HAS_MPL:
        args.append("--no-plots")
    assert cli_main(args) == 0
    return out


# ---------------------------------------------------------------------------- browser


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    """Headless Chromium through the system chromedriver, offline, console logged."""
    if not (CHROMIUM.is_file() and CHROMEDRIVER.is_file()):
        pytest.skip(BROWSER_MISSING)
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
        from selenium.webdriver.common.selenium_manager import SeleniumManager
    except ImportError:
        pytest.skip(BROWSER_MISSING)

    def no_manager(*args, **kwargs):
        raise AssertionError("Selenium Manager must not run: the driver path is given")

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in CHROME_FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(SeleniumManager, "binary_paths", no_manager)
        driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
        try:
            driver.execute_cdp_cmd("Network.enable", {})
            driver.execute_cdp_cmd(
                "Network.emulateNetworkConditions",
                {"offline": True, "latency": 0, "downloadThroughput": 0, "uploadThroughput": 0},
            )
            yield driver
        finally:
            driver.quit()


def save_screenshot(driver, path: Path, attempts: int = 3) -> bool:
    """A screenshot of the page; a tall page on a loaded machine can take the renderer past
    chromedriver's fixed 10 s for one capture, so a timed-out capture is retried."""
    from selenium.common.exceptions import TimeoutException

    for attempt in range(attempts):
        try:
            return bool(driver.save_screenshot(str(path)))
        except TimeoutException:
            if attempt == attempts - 1:
                raise
            time.sleep(5)
    return False


def open_page(driver, path: Path) -> None:
    from selenium.webdriver.support.ui import WebDriverWait

    driver.get_log("browser")  # drop what earlier pages logged
    driver.get(path.resolve().as_uri())
    WebDriverWait(driver, 20).until(
        lambda d: d.execute_script("return document.documentElement.dataset.ready === 'true'")
    )
    WebDriverWait(driver, 20).until(
        lambda d: d.execute_script(
            "return Array.from(document.images).every(i => i.complete)"
            " && document.readyState === 'complete'"
        )
    )


def console_errors(driver) -> list[dict]:
    return [e for e in driver.get_log("browser") if e["level"] in ("SEVERE", "ERROR")]


def js(driver, script: str, *args):
    return driver.execute_script(script, *args)


def table2_cells_on_page(driver) -> list[list]:
    """[metric, dataset, level, method, value text (None when the cell has no value), bold,
    the cell's whole text] for every cell of every Table 2 on the page."""
    return js(
        driver,
        """
        const out = [];
        for (const block of document.querySelectorAll('#table2 .block')) {
          const table = block.querySelector('table');
          const heads = [...table.tHead.rows[0].cells].map(c => c.innerText.trim());
          for (const row of table.tBodies[0].rows) {
            const c = [...row.cells];
            for (let i = 2; i < c.length; i++) {
              const v = c[i].querySelector('.v');
              out.push([block.dataset.metric, c[0].innerText.trim(), c[1].innerText.trim(),
                        heads[i].replace(/[▲▼]/g, ''), v ? v.innerText.trim() : null,
                        !!c[i].querySelector('.v b'), c[i].innerText.trim()]);
            }
          }
        }
        return out;
        """,
    )


def table2_on_page(driver) -> dict[tuple[str, str, str, str], tuple[str, bool]]:
    """(metric, dataset, level, method) -> (cell text, bold) from every Table 2 on the page."""
    return {
        (m, d, lv, k): (text, bold)
        for m, d, lv, k, text, bold, _ in table2_cells_on_page(driver)
        if text is not None
    }


def table2_expected(report: Path) -> dict[tuple[str, str, str, str], tuple[str, bool]]:
    frame = pd.read_csv(report / "table2.csv")
    return {
        (r.metric, r.dataset, r.level, r.method): (
            f"{r.mean:.{DIGITS}f} ± " + ("–" if pd.isna(r.std) else f"{r.std:.{DIGITS}f}"),
            bool(r.best),
        )
        for r in frame.itertuples(index=False)
    }


def wtl_on_page(driver) -> dict[tuple[str, str], str]:
    rows = js(
        driver,
        """
        const table = document.querySelector('#wtl-table');
        const heads = [...table.tHead.rows[0].cells]
          .map(c => c.innerText.replace(/[▲▼]/g, '').trim());
        const out = [];
        for (const row of [...table.tBodies[0].rows, ...table.tFoot.rows]) {
          const c = [...row.cells];
          for (let i = 1; i < c.length; i++)
            out.push([heads[i], c[0].innerText.trim(), c[i].querySelector('.v').innerText]);
        }
        return out;
        """,
    )
    return {(baseline, metric): text for baseline, metric, text in rows}


def wtl_expected(report: Path) -> dict[tuple[str, str], str]:
    frame = pd.read_csv(report / "wtl.csv")
    return {
        (r.baseline, "total" if r.metric == "total" else metric_name(r.metric)): (
            f"{r.win}/{r.tie}/{r.loss}"
        )
        for r in frame.itertuples(index=False)
    }


def bayes_wtl_on_page(driver) -> dict[tuple[str, str], str]:
    rows = js(
        driver,
        """
        const table = document.querySelector('#bayes-wtl-table');
        const heads = [...table.tHead.rows[0].cells]
          .map(c => c.innerText.replace(/[▲▼]/g, '').trim());
        const out = [];
        for (const row of [...table.tBodies[0].rows, ...table.tFoot.rows]) {
          const c = [...row.cells];
          for (let i = 1; i < c.length; i++)
            out.push([heads[i], c[0].innerText.trim(), c[i].querySelector('.v').innerText]);
        }
        return out;
        """,
    )
    return {(baseline, metric): text for baseline, metric, text in rows}


def bayes_wtl_expected(report: Path) -> dict[tuple[str, str], str]:
    frame = pd.read_csv(report / "bayes_wtl.csv")
    return {
        (r.baseline, "total" if r.metric == "total" else metric_name(r.metric)): (
            f"{r.win}/{r.tie}/{r.loss}/{r.undecided}"
        )
        for r in frame.itertuples(index=False)
    }


def table_rows_on_page(driver, table_id: str) -> list[list[str]]:
    """Every body row of a page table, cell texts (the metric column first)."""
    return js(
        driver,
        "return [...document.getElementById(arguments[0]).tBodies[0].rows]"
        ".map(r => [...r.cells].map(c => c.innerText.trim()))",
        table_id,
    )


def markdown_rows(path: Path) -> list[list[str]]:
    """The rows of the per-metric tables under "### <metric>" headings of a Markdown file,
    each prefixed with its metric's heading (as the page's metric column shows it)."""
    rows, metric = [], None
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("### "):
            metric = line[4:].rsplit(" ", 1)[0]
        elif line.startswith("## "):
            metric = None
        elif metric and line.startswith("| ") and not line.startswith("| :"):
            cells = [c.strip() for c in line.strip("|").split(" | ")]
            if cells[0] != "dataset":
                rows.append([metric, *cells])
    return rows


def column_values(driver, table_id: str, column: int) -> list[str]:
    return js(
        driver,
        "return [...document.getElementById(arguments[0]).tBodies[0].rows]"
        ".map(r => r.cells[arguments[1]].innerText.trim())",
        table_id,
        column,
    )


def check_loads_cleanly(driver, report: Path) -> None:
    """No console error, every figure decoded, nothing fetched from the network."""
    assert console_errors(driver) == []
    images = js(
        driver,
        "return [...document.images]"
        ".map(i => [i.alt, i.complete, i.naturalWidth, i.src.slice(0, 5)])",
    )
    figures = {p.stem for p in (report / "plots").glob("*.svg")} if HAS_MPL else set()
    assert len(images) == len(figures)
    for alt, complete, width, scheme in images:
        assert complete and width > 0 and scheme == "data:", alt
    svgs = js(
        driver,
        "return [...document.querySelectorAll('svg')].map(s => s.getBoundingClientRect().width)",
    )
    assert all(width > 0 for width in svgs)
    fetched = js(driver, "return performance.getEntriesByType('resource').map(e => e.name)")
    assert [u for u in fetched if not u.startswith(("file:", "data:"))] == []


@pytest.mark.slow
def test_page_in_headless_chromium(browser, report_dir, sweep, tmp_path):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    driver, page = browser, report_dir / "report.html"
    open_page(driver, page)
    check_loads_cleanly(driver, report_dir)

    # every Table 2 cell and every win/tie/loss count, as in the CSVs, bold where best
    expected = table2_expected(report_dir)
    assert table2_on_page(driver) == expected
    assert wtl_on_page(driver) == wtl_expected(report_dir)
    # the Bayesian win/tie/loss/undecided and, unfolded, every per-dataset comparison with
    # its effect size and every Bayesian posterior, as in wtl.md and bayes.md
    assert bayes_wtl_on_page(driver) == bayes_wtl_expected(report_dir)
    js(driver, "document.querySelectorAll('details').forEach(d => d.open = true)")
    assert table_rows_on_page(driver, "wtl-cmp-table") == markdown_rows(report_dir / "wtl.md")
    assert table_rows_on_page(driver, "bayes-cmp-table") == markdown_rows(report_dir / "bayes.md")
    assert len(table_rows_on_page(driver, "bayes-across-table")) == len(
        pd.read_csv(report_dir / "bayes_across.csv")
    )
    metrics = list(dict.fromkeys(pd.read_csv(report_dir / "table2.csv")["metric"]))
    assert js(driver, "return document.querySelectorAll('#table2 table').length") == len(metrics)

    # sort: a method column best first (its metric's direction), again: worst first
    table2 = pd.read_csv(report_dir / "table2.csv")
    metric = "hamming_loss"  # lower is better: best first is ascending
    rows = table2[(table2["metric"] == metric) & (table2["method"] == "ridge")]
    table_id = f"t2-{metric}"
    ridge = 1 + 1 + list(dict.fromkeys(table2["method"])).index("ridge")  # dataset, noise first
    header = driver.find_element(By.CSS_SELECTOR, f"#{table_id} thead th:nth-child({ridge + 1})")
    header.find_element(By.TAG_NAME, "button").click()
    texts = [t.split(" ±")[0] for t in column_values(driver, table_id, ridge)]
    assert texts == [f"{m:.{DIGITS}f}" for m in sorted(rows["mean"])]
    driver.find_element(
        By.CSS_SELECTOR, f"#{table_id} thead th:nth-child({ridge + 1}) button"
    ).click()
    texts = [t.split(" ±")[0] for t in column_values(driver, table_id, ridge)]
    assert texts == [f"{m:.{DIGITS}f}" for m in sorted(rows["mean"], reverse=True)]
    sorted_head = driver.find_element(By.CSS_SELECTOR, f"#{table_id} thead th[aria-sort]")
    assert sorted_head.get_attribute("aria-sort") == "descending"
    # sorting reorders rows, never changes a number
    assert table2_on_page(driver) == expected

    # filter by a method through the page's select: one method column, one wtl column
    Select(driver.find_element(By.ID, "f-method")).select_by_visible_text("ridge")
    heads = js(
        driver,
        "return [...document.querySelectorAll('#table2 thead tr')]"
        ".map(r => [...r.cells].map(c => c.innerText.replace(/[▲▼]/g, '').trim()))",
    )
    assert heads and all(h == ["dataset", "noise", "ridge"] for h in heads)
    shown = table2_on_page(driver)
    assert shown == {k: v for k, v in expected.items() if k[3] == "ridge"}
    assert set(wtl_on_page(driver)) == {k for k in wtl_expected(report_dir) if k[0] == "ridge"}

    # filter by metric and dataset: one table, that dataset's rows, other figures hidden
    Select(driver.find_element(By.ID, "f-metric")).select_by_visible_text(metric_name(metric))
    Select(driver.find_element(By.ID, "f-dataset")).select_by_visible_text("medical")
    assert {k[0] for k in table2_on_page(driver)} == {metric}
    assert {k[1] for k in table2_on_page(driver)} == {"medical"}
    if HAS_MPL:
        visible = js(
            driver,
            "return [...document.querySelectorAll('figure')].filter(f => f.offsetParent)"
            ".map(f => f.dataset.metric)",
        )
        assert visible and set(visible) == {metric}
    # filter by noise level
    driver.find_element(By.ID, "f-reset").click()
    level = sorted(set(table2["level"]))[0]
    Select(driver.find_element(By.ID, "f-level")).select_by_visible_text(level)
    assert {k[2] for k in table2_on_page(driver)} == {level}
    driver.find_element(By.ID, "f-reset").click()
    assert table2_on_page(driver) == expected

    # mean ± std <-> rank: the rank of each mean within its row, in the metric's direction
    driver.find_element(By.ID, "v-rank").click()
    records = load_results([sweep["store"]]).records
    higher = records.groupby("metric")["higher_is_better"].first().astype(bool)
    signed = table2["mean"].where(table2["metric"].map(higher), -table2["mean"])
    ranks = signed.groupby([table2["metric"], table2["dataset"], table2["level"]]).rank(
        ascending=False
    )
    page_ranks = {k: float(text) for k, (text, _) in table2_on_page(driver).items()}
    assert page_ranks == {
        (r.metric, r.dataset, r.level, r.method): rank
        for r, rank in zip(table2.itertuples(index=False), ranks, strict=True)
    }
    driver.find_element(By.ID, "v-mean").click()
    assert table2_on_page(driver) == expected

    # units that did not finish: both failed units of the store and the killed run
    units = js(
        driver,
        "return [...document.querySelectorAll('#units-table tbody tr')]"
        ".map(r => [r.cells[0].innerText.trim(), r.cells[2].innerText])",
    )
    failures = pd.read_csv(report_dir / "failures.csv")
    assert len(failures) == 2
    assert sorted(s for s, _ in units) == ["failed", "failed", "incomplete"]
    assert all("false" in e for s, e in units if s == "failed")

    # provenance: the sweep's command line, package versions, the report command
    text = driver.find_element(By.ID, "provenance").text
    assert "python -m pmlbench -m method=mlknn,ridge dataset=genbase,medical" in text
    assert "numpy" in text and pd.__version__ in text
    assert "report" in text

    # a full-page screenshot, for a person to look at
    height = js(driver, "window.scrollTo(0, 0); return document.documentElement.scrollHeight")
    driver.set_window_size(1400, min(int(height) + 40, 12000))
    js(driver, "window.scrollTo(0, 0)")
    shot = tmp_path / "report.png"
    assert save_screenshot(driver, shot)
    assert shot.stat().st_size > 10_000
    driver.set_window_size(1400, 1000)
    assert console_errors(driver) == []


@pytest.mark.slow
def test_page_works_offline_without_figures(browser, sweep, tmp_path):
    """--no-plots: the page has no figure section, and still every table and no errors."""
    out = tmp_path / "report"
    assert (
        cli_main(["report", str(sweep["store"]), "--out", str(out), "--no-plots", "--quiet"]) == 0
    )
    open_page(browser, out / "report.html")
    assert console_errors(browser) == []
    assert js(browser, "return document.images.length") == 0
    assert js(browser, "return document.getElementById('figures')") is None
    assert table2_on_page(browser) == table2_expected(out)
    assert "pass --reference" in js(browser, "return document.getElementById('wtl').innerText")


@pytest.mark.slow
def test_page_with_natural_candidates_and_uniform_noise(browser, tmp_path):
    """yeastbp (natural candidate labels) beside genbase (uniform noise) in one page."""
    store = tmp_path / "store"
    real_sweep(
        tmp_path,
        ["method=mlknn", "method.k=5,10", "dataset=genbase,yeastbp", "noise.rate=1.0"],
        store,
        "multirun",
    )
    out = tmp_path / "report"
    assert cli_main(["report", str(store), "--out", str(out), "--no-plots", "--quiet"]) == 0
    open_page(browser, out / "report.html")
    assert console_errors(browser) == []
    shown = table2_on_page(browser)
    assert shown == table2_expected(out)
    assert "natural" in {k[2] for k in shown}


def test_declined_cells_show_n_a_and_missing_ones_a_dash(browser, tmp_path):
    """particle_vls declines medical (990 label pairs over method.max_label_pairs=500) and
    runs on genbase (351 pairs): its medical cells read n/a, with the legend saying so."""
    store = tmp_path / "store"
    common = ["noise.rate=1.0", "dataset=genbase,medical"]
    real_sweep(tmp_path, ["method=mlknn", *common], store, "mlknn")
    real_sweep(
        tmp_path, ["method=particle_vls", "method.max_label_pairs=500", *common], store, "vls"
    )
    out = tmp_path / "report"
    assert cli_main(["report", str(store), "--out", str(out), "--no-plots", "--quiet"]) == 0
    open_page(browser, out / "report.html")
    assert console_errors(browser) == []
    assert table2_on_page(browser) == table2_expected(out)  # every finished cell as in the CSV
    cells = [
        (dataset, method, whole)
        for _, dataset, _, method, text, _, whole in table2_cells_on_page(browser)
        if text is None
    ]
    n_metrics = pd.read_csv(out / "table2.csv")["metric"].nunique()
    assert sorted(cells) == [("medical", "particle_vls", "n/a")] * n_metrics
    legend = js(browser, "return document.querySelector('#table2 .legend').innerText")
    assert "n/a: the method declined this dataset up front" in legend


# ---------------------------------------------------------------------------- no browser


def test_page_is_self_contained_and_optional(tmp_path):
    """Default on, off with --no-html; nothing outside the file is referenced."""
    from tests.helpers import run_rows, write_run  # a hand-made multirun

    root = tmp_path / "runs"
    for job, (dataset, method) in enumerate([("d1", "a"), ("d1", "b"), ("d2", "a"), ("d2", "b")]):
        values = [(0.5 + 0.1 * (method == "a") + 0.01 * s, 0.1) for s in range(3)]
        write_run(root, f"{job}_{method}_{dataset}", run_rows(dataset, 1.0, method, values))
    report = build_report([root], ReportOptions(reference="a", plots=False))
    written = write_report(report, tmp_path / "out")
    page = tmp_path / "out" / "report.html"
    assert page in written
    text = page.read_text(encoding="utf-8")
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:|//)""", text)
    assert "<link" not in text and "@import" not in text and "url(http" not in text
    assert not re.search(r"<script[^>]+src=", text)
    data = json.loads(
        re.search(r'<script type="application/json" id="report-data">(.*?)</script>', text, re.S)
        .group(1)
        .replace("<\\/", "</")
    )
    assert data["methods"] == ["a", "b"] and data["reference"] == "a"
    assert len(data["t2"]) == len(pd.read_csv(tmp_path / "out" / "table2.csv"))
    out = tmp_path / "no-html"
    code = cli_main(["report", str(root), "--out", str(out), "--no-plots", "--no-html", "--quiet"])
    assert code == 0 and (out / "table2.csv").exists() and not (out / "report.html").exists()


def test_assets_ship_with_the_package():
    for name in ASSETS:
        assert len(asset(name)) > 100
    assert "</script" not in asset("report.js")  # it is inlined in a <script> element


@pytest.mark.slow
def test_wheel_ships_the_page_assets(installed_wheel):  # noqa: F811 - the imported fixture
    wheel, _ = installed_wheel
    names = zipfile.ZipFile(wheel).namelist()
    assert [f"pmlbench/report/assets/{n}" in names for n in ASSETS] == [True] * len(ASSETS)


def test_summary_markdown_and_commands():
    html = markdown_html(
        "# Summary\n\nSome <b> & text.\n\n## Part\n\n**x vs y**\n\n- one **two**\n"
    )
    assert "Some &lt;b&gt; &amp; text." in html
    assert '<details class="sum-group" open><summary><strong>x vs y</strong>' in html
    assert "<li>one <strong>two</strong></li>" in html
    assert display_command(["/src/pmlbench/__main__.py", "-m", "a=1,2", "b=x y"]) == (
        "python -m pmlbench -m a=1,2 'b=x y'"
    )
    assert display_command(["/venv/bin/pmlbench", "report", "out"]) == "pmlbench report out"


def test_static_sections_use_the_page_table_style(tmp_path):
    """Issue 35 item 5: the Pairwise and Disambiguation sections are written into the page
    (not drawn by report.js); their tables carry the page's table style (table.data in a
    .scroll box, numbers right-aligned) like every other table."""
    from pmlbench.report import disambiguation, pairwise
    from tests.helpers import run_rows, write_run

    root = tmp_path / "runs"
    for job, (dataset, method) in enumerate(
        [(d, m) for d in ("d1", "d2", "d3") for m in ("a", "b", "c")]
    ):
        values = [(0.5 + 0.1 * (method == "a") + 0.01 * s, 0.1) for s in range(3)]
        rows = run_rows(dataset, 1.0, method, values)
        for row in rows:
            row.update(disambiguation_auc=0.8, disambiguation_precision=0.6)
        write_run(root, f"{job}_{method}_{dataset}", rows)
    report = build_report([root], ReportOptions(reference="a", plots=False))
    p = report.prepared
    bodies = {
        "pairwise": pairwise.to_html(report.pairwise, p, 0.05),
        "disambiguation": disambiguation.to_html(report.disambiguation),
    }
    for name, body in bodies.items():
        tables = re.findall(r"<table[^>]*>", body)
        assert tables, name
        assert all(t == f'<table class="data {name}">' for t in tables), tables
        assert body.count('<div class="scroll">') == len(tables)
        assert '<td class="num">' in body
    write_report(report, tmp_path / "out")
    page = (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    assert '<table class="data pairwise">' in page and '<table class="data disambiguation">' in page


def test_table2_row_ranks_tie_means_that_agree_to_the_tolerance(tmp_path):
    """Issue 35 item 4: Table 2's rank view ranks a row as the Friedman test ranks a block:
    means 1e-17 apart (the same numbers summed in another order) share a rank."""
    from pmlbench.report.html import page_data
    from tests.helpers import run_rows, write_run

    root = tmp_path / "runs"
    for job, (method, v) in enumerate([("a", 0.3), ("b", 0.1 + 0.2), ("c", 0.2)]):
        write_run(root, f"{job}_{method}", run_rows("d1", 1.0, method, [(v, 0.1)] * 3))
    assert 0.3 != 0.1 + 0.2
    report = build_report([root], ReportOptions(reference="a", plots=False))
    ranks = {(c[0], c[2]): c[7] for c in page_data(report)["t2"]}
    assert [ranks[(0, m)] for m in range(3)] == [1.5, 1.5, 3.0]


def test_control_and_bidirectional_characters_never_reach_the_page_raw(tmp_path):
    """Issue 34 item 11: a U+202E in the command line reversed what the provenance showed,
    and U+200F was escaped nowhere. Every string of the page, its data included, shows them
    as visible escapes."""
    from pmlbench.report.html import render_html
    from tests.helpers import run_rows, write_run

    root = tmp_path / "runs"
    for job, method in enumerate(["a", "b"]):
        values = [(0.5 + 0.1 * (method == "a") + 0.01 * s, 0.1) for s in range(3)]
        write_run(root, f"{job}_{method}_d1", run_rows("d1", 1.0, method, values))
    report = build_report([root], ReportOptions(reference="a", plots=False))
    command = ["pmlbench", "report", "runs\u202eevil\u200f", "--title", "x\x1b[2Jy"]
    page = render_html(report, summary="a summary \u202e", command=command)
    for raw in ("\u202e", "\u200f", "\x1b"):
        assert raw not in page
    assert "\\u202e" in page and "\\u200f" in page and "\\x1b" in page
