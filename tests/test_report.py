"""``ale report``: one self-contained HTML page; escaping, reproducibility, history drift."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from ale_cli import api
from ale_cli.errors import InputError
from ale_cli.report import build_report
from ale_cli.report.figures import trend
from ale_cli.report.history import feature_drifts, read_history
from ale_cli.store.npz import Store, write_store
from ale_cli.summary.model import write_summary

EVIL = "<script>alert(1)</script>"


def make_store(path: Path, *, slope_b: float = 1.0, n: int = 400, seed: int = 0) -> Path:
    """A store of f(x) = x_evil^2 + slope_b * b + 0.2 c (local effects written directly)."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(n, 3))
    E = np.column_stack([2 * X[:, 0], np.full(n, slope_b), np.full(n, 0.2)])
    E = E + rng.normal(scale=0.05, size=E.shape)
    names = (EVIL, "b", "c")
    meta = {
        "schema_version": 2,
        "feature_names": list(names),
        "model": {"path": "model<b>.pt", "sha256": "ab" * 32, "format": "torchscript"},
        "data": {"path": "data&co.csv", "sha256": "cd" * 32},
        "method": "autodiff",
        "n_rows": n,
    }
    pred = X[:, 0] ** 2 + slope_b * X[:, 1] + 0.2 * X[:, 2]
    write_store(path, Store(X=X, local_effects=E, prediction=pred, feature_names=names, meta=meta))
    return path


@pytest.fixture()
def run_files(tmp_path: Path) -> dict[str, Path]:
    store = make_store(tmp_path / "s.npz")
    rhale = tmp_path / "rhale.json"
    write_summary(rhale, api.rhale(store), timestamp=False)
    dale = tmp_path / "rebin.json"
    write_summary(dale, api.rebin(store, bins=8), timestamp=False)
    return {"store": store, "rhale": rhale, "rebin": dale}


def test_strings_from_the_data_are_escaped(run_files):
    result = build_report(
        [run_files["rhale"], run_files["rebin"]], store=run_files["store"], timestamp=False
    )
    html = result.html
    assert EVIL not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    # the only script element is the page's own sorting script
    assert html.count("<script") == 1
    assert "model&lt;b&gt;.pt" in html and "data&amp;co.csv" in html
    assert result.features == 3


def test_the_page_asks_for_nothing_outside_itself(run_files):
    html = build_report([run_files["rhale"]], store=run_files["store"], timestamp=False).html
    # no attribute that would load something: src=, href= other than in-page anchors
    assert not re.search(r"\bsrc\s*=", html.replace('src="data:', ""))
    hrefs = re.findall(r'href="([^"]*)"', html)
    assert hrefs and all(h.startswith("#") for h in hrefs)
    assert "@import" not in html and "url(http" not in html and "@font-face" not in html


def test_byte_reproducible_without_timestamp(run_files, tmp_path, cli):
    args = [run_files["rhale"], run_files["rebin"], "--store", run_files["store"]]
    a, b = tmp_path / "a.html", tmp_path / "b.html"
    assert cli("report", *args, "-o", a, "--no-timestamp").exit_code == 0
    assert cli("report", *args, "-o", b, "--no-timestamp").exit_code == 0
    assert a.read_bytes() == b.read_bytes()
    assert cli("report", *args, "-o", b).exit_code == 0
    assert a.read_bytes() != b.read_bytes()  # the run time is in the header


def test_one_feature_is_one_feature_not_features(run_files, tmp_path, cli):
    one = tmp_path / "one.json"
    write_summary(one, api.rhale(run_files["store"], features="b"), timestamp=False)
    result = cli("report", one, "-o", tmp_path / "r.html")
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("report: 1 feature, "), result.stdout


def test_ids_are_unique_across_inline_figures(run_files):
    html = build_report([run_files["rhale"], run_files["rebin"]], timestamp=False).html
    ids = re.findall(r'\bid="([^"]+)"', html)
    assert len(ids) == len(set(ids))
    refs = set(re.findall(r'(?:href="#|url\(#)([^")]+)', html))
    assert refs <= set(ids)


def test_features_table_is_ranked_by_aled_and_links_to_sections(run_files):
    html = build_report([run_files["rhale"]], timestamp=False).html
    table = html[
        html.index('id="features-table"') : html.index("</table>", html.index("features-table"))
    ]
    names = re.findall(r'<a href="#(feature-\d)">([^<]+)</a>', table)
    # ALED: b 0.5, x^2 about 0.26, c 0.1: b first, c last
    assert [n for _, n in names] == ["b", "&lt;script&gt;alert(1)&lt;/script&gt;", "c"]
    for anchor, _ in names:
        assert f'id="{anchor}"' in html


def test_audit_banner_and_table(run_files, tmp_path, cli):
    rules = tmp_path / "rules.yaml"
    rules.write_text('rules:\n  - feature: "*"\n    max_aled: 0.3\n')
    audit = tmp_path / "audit.json"
    result = cli("audit", run_files["rhale"], "--rules", rules, "--json-report", audit)
    assert result.exit_code == 3
    html = build_report([run_files["rhale"]], audit=audit, timestamp=False).html
    assert 'class="banner fail"' in html and "Audit failed" in html
    # ALED: b (slope 1 on [-1, 1]) 0.5; x^2 about 0.26; c (slope 0.2) 0.1
    fails = re.findall(r'<tr><td>([^<]+)</td><td>max_aled</td>.*?class="verdict-(\w+)"', html)
    assert [name for name, verdict in fails if verdict == "fail"] == ["b"]


def test_not_an_audit_report_is_one_line(run_files, tmp_path):
    with pytest.raises(InputError, match="is not an ale audit report"):
        build_report([run_files["rhale"]], audit=run_files["rebin"])


def test_store_of_another_run_is_refused(run_files, tmp_path):
    other = make_store(tmp_path / "other.npz", n=300)
    with pytest.raises(InputError, match="does not match summary"):
        build_report([run_files["rhale"]], store=other)


def test_summaries_of_another_model_are_refused(run_files, tmp_path):
    """The page names one model and its data: a summary of another model is refused."""
    import json

    summary = json.loads(run_files["rebin"].read_text())
    summary["store"]["model"]["sha256"] = "ef" * 32
    changed = tmp_path / "other-model.json"
    changed.write_text(json.dumps(summary))
    with pytest.raises(InputError, match="are of different model files .*'ale diff' compares"):
        build_report([run_files["rhale"], changed])
    assert build_report([run_files["rhale"], run_files["rebin"]], timestamp=False).features == 3


def test_an_audit_of_other_summaries_is_refused(run_files, tmp_path, cli):
    rules = tmp_path / "rules.yaml"
    rules.write_text('rules:\n  - feature: "*"\n    max_aled: 0.3\n')
    audit = tmp_path / "audit.json"
    assert cli("audit", run_files["rebin"], "--rules", rules, "--json-report", audit).exit_code == 3
    with pytest.raises(InputError, match="checked rebin.json, none of the summaries given"):
        build_report([run_files["rhale"]], audit=audit)
    # the audit of one of the summaries given is shown
    html = build_report([run_files["rhale"], run_files["rebin"]], audit=audit).html
    assert "Audit failed" in html


def test_history_drift_ranks_the_shifted_feature_first(tmp_path):
    history = tmp_path / "history"
    for label, slope in (("2026-01-01", 1.0), ("2026-01-02", 1.0)):
        (history / label).mkdir(parents=True)
        store = make_store(tmp_path / f"{label}.npz", slope_b=slope)
        write_summary(history / label / "rhale.json", api.rhale(store), timestamp=False)
    current = tmp_path / "now" / "rhale.json"
    current.parent.mkdir()
    write_summary(current, api.rhale(make_store(tmp_path / "now.npz", slope_b=3.0)))
    runs = read_history(history)
    assert [r.label for r in runs] == ["2026-01-01", "2026-01-02"]
    from ale_cli.summary.model import read_summary

    drifts = {d.name: d for d in feature_drifts("rhale.json", read_summary(current), runs)}
    # b's curve went from slope 1 to slope 3 on [-1, 1]: centered difference 2x, max 2
    np.testing.assert_allclose(drifts["b"].previous, 2.0, rtol=0.1)
    assert drifts["c"].previous < 0.1
    html = build_report([current], history=history, timestamp=False).html
    moved = html[html.index('id="moved-table"') :]
    first = re.search(r'<a href="#feature-\d">([^<]+)</a>', moved)
    assert first is not None and first.group(1) == "b"
    assert html.count('class="trend"') == 3


def test_trend_scales_zero_to_the_bottom():
    t = trend([0.0, 1.0, None, 0.5], ["a", "b", "c", "d"], width=104, height=24)
    ys = {label: y for _, y, _, label in t.points}
    assert ys["a"] == 20.0 and ys["b"] == 4.0 and ys["d"] == 12.0
    assert "c" not in ys


def test_api_report_writes_the_same_page(run_files, tmp_path):
    out = tmp_path / "page.html"
    html = api.report([run_files["rhale"]], out=out, timestamp=False)
    assert out.read_text(encoding="utf-8") == html
    assert html == build_report([run_files["rhale"]], timestamp=False).html


def test_the_newest_history_run_holding_this_summary_is_left_out(run_files, tmp_path):
    history = tmp_path / "history"
    (history / "1").mkdir(parents=True)
    (history / "2").mkdir(parents=True)
    other = make_store(tmp_path / "other.npz", slope_b=2.0)
    write_summary(history / "1" / "rhale.json", api.rhale(other), timestamp=False)
    (history / "2" / "rhale.json").write_bytes(run_files["rhale"].read_bytes())
    result = build_report([history / "2" / "rhale.json"], history=history, timestamp=False)
    assert result.history_runs == 1
    moved = result.html[result.html.index('id="moved-table"') :]
    assert re.search(r'<a href="#feature-\d">b</a>', moved[: moved.index("</table>")])
    assert ">1</td>" in moved  # against run 1, not against itself


def test_a_regional_summary_beside_a_first_order_one_shows_its_regions_only(run_files, tmp_path):
    """Its global curves are the first-order estimate given beside it: no second overview
    of them, and the features table is the other summary's; alone, its curves are shown."""
    from ale_cli.summary.regional import write_regional

    path = tmp_path / "regional.json"
    write_regional(path, api.regional(run_files["store"], bins=16), timestamp=False)
    beside = build_report([path, run_files["rebin"]], store=run_files["store"]).html
    assert 'id="regional"' in beside and 'id="estimators"' not in beside
    assert "Every feature on a common scale (dale (rebin.json))" in beside
    alone = build_report([path], store=run_files["store"]).html
    assert "Every feature on a common scale (regional (regional.json))" in alone


def test_a_report_inside_its_history_directory_is_rewritten(run_files, tmp_path, cli):
    """The history directory is an input, read by its runs' subdirectories: the page
    written at its top level is ale's own, rewritten by the next run, never refused."""
    import shutil

    history = tmp_path / "history"
    (history / "2026-01-01").mkdir(parents=True)
    shutil.copy(run_files["rebin"], history / "2026-01-01" / "rebin.json")
    page = history / "report.html"
    for _ in range(2):
        result = cli("report", run_files["rebin"], "--history", history, "-o", page)
        assert result.exit_code == 0, result.stderr
    assert page.read_text().lstrip().lower().startswith("<!doctype html")
    # a file of the user's there is not ale's: refused, even with --force
    notes = history / "notes.html"
    notes.write_text("<p>mine</p>\n")
    result = cli("report", run_files["rebin"], "--history", history, "-o", notes, "--force")
    assert result.exit_code == 2
    assert notes.read_text() == "<p>mine</p>\n"
