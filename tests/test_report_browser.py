"""The report in a real browser: headless Chromium through Playwright, the network blocked.

Chromium is the system's (``/usr/bin/chromium`` on Debian, ``apt-get install
chromium``; ``.ci/run`` installs it), launched by path: nothing is downloaded.
The tests skip, with one line, only when no Chromium is found.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from test_report import EVIL, make_store  # tests/ is on sys.path (rootdir conftest)

from ale_cli import api
from ale_cli.report import build_report, write_report
from ale_cli.summary.model import write_summary

CANDIDATES = (
    os.environ.get("ALE_CHROMIUM", ""),
    "/usr/bin/chromium",
    "/usr/lib/chromium/chromium",
    "/usr/bin/chromium-browser",
    "/usr/bin/google-chrome",
)
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
]


def chromium_path() -> str | None:
    for candidate in CANDIDATES:
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return shutil.which("chromium")


@pytest.fixture(scope="module")
def browser():  # type: ignore[no-untyped-def]
    path = chromium_path()
    if path is None:
        pytest.skip("no Chromium found (apt-get install chromium, or set ALE_CHROMIUM)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=path, args=ARGS)
        yield browser
        browser.close()


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A report with the escaped feature name, two estimators, an audit and a history."""
    root = tmp_path_factory.mktemp("browser")
    history = root / "history"
    for label, slope in (("20260101T000000Z", 1.0), ("20260102T000000Z", 2.0)):
        (history / label).mkdir(parents=True)
        store = make_store(root / f"{label}.npz", slope_b=slope)
        write_summary(history / label / "rhale.json", api.rhale(store), timestamp=False)
        write_summary(history / label / "rebin.json", api.rebin(store, bins=8), timestamp=False)
    store = make_store(root / "s.npz", slope_b=3.0)
    rhale, rebin = root / "rhale.json", root / "rebin.json"
    write_summary(rhale, api.rhale(store), timestamp=False)
    write_summary(rebin, api.rebin(store, bins=8), timestamp=False)
    from ale_cli.audit import audit_files
    from ale_cli.audit.report import report_dict
    from ale_cli.io.jsonio import dumps

    rules = root / "rules.yaml"
    rules.write_text('rules:\n  - feature: "*"\n    max_aled: 0.3\n')
    audit = root / "audit.json"
    audit.write_text(dumps(report_dict(audit_files([rhale], rules))))
    result = build_report([rhale, rebin], store=store, audit=audit, history=history)
    out = root / "report.html"
    write_report(out, result.html)
    return out


def test_the_report_in_a_browser_with_the_network_blocked(browser, report, tmp_path):
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    url = report.as_uri()
    blocked: list[str] = []
    failed: list[str] = []
    console_errors: list[str] = []
    dialogs: list[str] = []

    def route(r):  # type: ignore[no-untyped-def]
        if r.request.url == url:
            r.continue_()
        else:
            blocked.append(r.request.url)
            r.abort()

    page.route("**/*", route)
    page.on("requestfailed", lambda req: failed.append(req.url))
    page.on("console", lambda m: console_errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda exc: console_errors.append(str(exc)))
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.goto(url, wait_until="load")

    # every figure is drawn with a size
    figures = page.locator("svg.figure, svg.trend")
    assert figures.count() == 3 + 1 + 1 + 3  # features, overview, the rebin overview, trends
    for i in range(figures.count()):
        box = figures.nth(i).bounding_box()
        assert box is not None and box["width"] > 0 and box["height"] > 0, i

    # the escaped name is text: in the table, in the heading, in the figures' <text>
    names = page.locator("#features-table tbody td:nth-child(2)").all_inner_texts()
    assert EVIL in names
    assert page.locator("h3", has_text=EVIL).count() == 1
    assert page.locator("svg.figure text", has_text=EVIL).count() >= 1
    assert page.evaluate("document.scripts.length") == 1

    # clicking a header re-orders the rows (ascending, then descending)
    def column(n: int) -> list[str]:
        return page.locator(f"#features-table tbody td:nth-child({n})").all_inner_texts()

    by_rank = column(2)
    page.locator("#features-table th", has_text="ALED").first.click()
    aled = [float(v) for v in column(3)]
    assert aled == sorted(aled) and column(2) != by_rank
    page.locator("#features-table th", has_text="ALED").first.click()
    assert [float(v) for v in column(3)] == sorted(aled, reverse=True)
    page.locator("#features-table th", has_text="Feature").click()
    assert column(2) == sorted(by_rank, key=str.lower)

    # a row links to its feature's section
    page.locator("#features-table a", has_text="c").first.click()
    assert page.evaluate("location.hash").startswith("#feature-")

    shot = tmp_path / "report.png"
    page.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 10_000
    page.close()
    assert blocked == [] and failed == [] and console_errors == [] and dialogs == []


def test_print_media_hides_navigation(browser, report, tmp_path):
    page = browser.new_page()
    page.goto(report.as_uri())
    page.emulate_media(media="print")
    assert page.locator("nav.toc").is_hidden()
    pdf = tmp_path / "report.pdf"
    page.pdf(path=str(pdf))
    assert pdf.stat().st_size > 10_000
    page.close()


def test_the_page_starts_with_the_answer_and_folds_the_passed_rules(browser, report):
    """Verdict, summary in words, features by importance (table and small multiples), what
    moved, failures and warnings, the passed rules folded, then per-feature detail; the
    verdict and the importance table on the first screen; no script error, no request."""
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    url = report.as_uri()
    requests: list[str] = []
    errors: list[str] = []
    page.on("request", lambda r: requests.append(r.url) if r.url != url else None)
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(url, wait_until="load")

    order = ["#verdict", "#digest", "#features", "#moved", "#audit", "#audit-passed",
             "#feature-detail", "section.feature", "#estimators", "#about"]  # fmt: skip
    tops = [page.locator(sel).first.bounding_box()["y"] for sel in order]
    assert tops == sorted(tops), dict(zip(order, tops, strict=True))
    # the first screen holds the verdict and the importance table's rows
    assert page.locator("#verdict").bounding_box()["y"] < 200
    first_row = page.locator("#features-table tbody tr").first.bounding_box()
    assert first_row["y"] + first_row["height"] < 900
    verdict = page.locator("#verdict").inner_text()
    assert verdict.startswith("Audit failed: 1 rule(s) failed (b max_aled)")
    digest = page.locator("#digest").inner_text()
    assert "importance from dale (rebin.json)" in digest  # 8 bins against RHALE's few
    assert "Since the previous run, b moved most" in digest
    assert "The most important by ALED: b (NALED" in digest

    # failures first; the passed rules folded in <details>, shown on a click
    flagged = page.locator("#audit-table tbody tr").all_inner_texts()
    assert len(flagged) == 1 and flagged[0].split("\t")[:2] == ["b", "max_aled"]
    assert page.locator("#audit-passed").get_attribute("open") is None
    assert page.locator("#audit-passed-table").is_hidden()
    page.locator("#audit-passed > summary").click()
    assert page.locator("#audit-passed-table").is_visible()
    assert page.locator("#audit-passed-table tbody tr").count() == 2
    # every figure caption and statistics line names its summary
    for caption in page.locator("section.feature p.muted").all_inner_texts():
        assert caption.startswith("dale (rebin.json): rank")
    page.close()
    assert requests == [] and errors == []
