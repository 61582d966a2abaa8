"""``ale run``: a job file run end to end, cached steps, the manifest, the lock, the history."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import jsonschema
import numpy as np
import pandas as pd
import pytest

from ale_cli.io.files import sha256_file
from ale_cli.job.lock import run_lock

ROOT = Path(__file__).resolve().parent.parent
RUN_SCHEMA = json.loads((ROOT / "ale_cli/schema/run.schema.json").read_text())
RESULT_SCHEMA = json.loads((ROOT / "ale_cli/schema/result.schema.json").read_text())


def validated_manifest(directory: Path) -> dict:
    """run.json, checked against its schema and against the files it lists."""
    manifest = json.loads((directory / "run.json").read_text())
    jsonschema.validate(manifest, RUN_SCHEMA)
    for step in manifest["steps"]:
        for out in step["outputs"]:
            assert sha256_file(directory / out["path"]) == out["sha256"], out["path"]
    return manifest


@pytest.fixture(scope="module")
def product_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """TorchScript f(x) = x0 * x1 + x2: x0's ALE slope is the mean of x1 (a data property)."""
    import torch

    class Product(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x[:, 0] * x[:, 1] + x[:, 2]

    path = tmp_path_factory.mktemp("product") / "product.pt"
    torch.jit.save(torch.jit.script(Product()), str(path))
    return path


def product_data(path: Path, *, shift_x1: float = 0.0, seed: int = 0) -> Path:
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(300, 3))
    X[:, 1] += shift_x1
    pd.DataFrame(X, columns=["x0", "x1", "x2"]).round(6).to_csv(path, index=False)
    return path


def write_job(path: Path, **fields: object) -> Path:
    import yaml

    path.write_text(yaml.safe_dump(fields, sort_keys=False))
    return path


@pytest.fixture()
def sample_job(tmp_path: Path, mlp_model: Path, sample_dir: Path) -> Path:
    """The demo job on the sample MLP, with a copy of the data (tests change it)."""
    data = tmp_path / "diabetes.csv"
    data.write_bytes((sample_dir / "diabetes.csv").read_bytes())
    return write_job(
        tmp_path / "job.yaml",
        model=str(mlp_model),
        data="diabetes.csv",  # relative to the job file
        exclude=["target"],
        estimators={
            "rhale": {"max_bins": 50},
            "rebin": {"bins": 20, "binning": "quantile"},
            "interact": {"pairs": ["s1", "s2"]},
        },
        plots={"formats": ["png"], "overview_only": ["rhale"]},
        audit={"rules": str(ROOT / "configs/audit-diabetes-mlp.yaml")},
        report={"timestamp": False},
        keep=5,
    )


def test_sample_job_runs_every_step_then_caches_them_all(cli, sample_job, tmp_path):
    out = tmp_path / "run"
    first = cli("run", sample_job, "-o", out, "--json")
    assert first.exit_code == 0, first.output
    value = json.loads(first.stdout)
    jsonschema.validate(value, RESULT_SCHEMA)
    manifest = validated_manifest(out)
    assert value["details"]["manifest"] == manifest
    names = [s["name"] for s in manifest["steps"]]
    assert names == [
        "compute", "rhale", "rebin", "interact",
        "plot-rhale", "plot-rebin", "plot-interact", "audit", "report",
    ]  # fmt: skip
    assert manifest["cache_hits"] == 0 and manifest["audit"]["passed"] is True
    # rhale: the overview alone; rebin: a figure per feature and the overview
    assert sorted(p.name for p in (out / "plots/rhale").iterdir()) == [
        ".ale-plots.json", "overview.png",
    ]  # fmt: skip
    assert (out / "plots/rebin/bmi.png").is_file()
    # 10 features, 13 figures: the plot steps' PNGs (dpi 120) taken as data: images, none
    # drawn again (the features' from rebin, the finest; rhale's overview)
    html = (out / "report.html").read_text(encoding="utf-8")
    assert 0 < len(html) < 3 * 1024 * 1024
    assert html.count('<img class="figure"') == 13 and 'class="figure" width=' not in html
    assert manifest["history"]["added"] is True
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file() and p.name != "run.json"}

    second = cli("run", sample_job, "-o", out, "--json")
    assert second.exit_code == 0, second.output
    again = validated_manifest(out)
    assert again["cache_hits"] == len(again["steps"]) and again["steps_run"] == 0
    assert all(s["cache_hit"] for s in again["steps"])
    assert again["history"] == {**manifest["history"], "added": False}
    after = {p: p.read_bytes() for p in out.rglob("*") if p.is_file() and p.name != "run.json"}
    assert after == before


def test_one_changed_data_byte_recomputes_and_the_report_shows_drift(cli, sample_job, tmp_path):
    out = tmp_path / "run"
    assert cli("run", sample_job, "-o", out).exit_code == 0
    data = tmp_path / "diabetes.csv"
    raw = bytearray(data.read_bytes())
    # the last digit of the second row's bmi value (a digit, so the file stays valid)
    row = raw.index(b"\n") + 1
    fields = raw[row : raw.index(b"\n", row)].split(b",")
    last = row + len(b",".join(fields[:3])) - 1
    raw[last] = ord("1") if raw[last] != ord("1") else ord("2")
    data.write_bytes(bytes(raw))

    result = cli("run", sample_job, "-o", out, "--json")
    assert result.exit_code == 0, result.output
    manifest = validated_manifest(out)
    steps = {s["name"]: s for s in manifest["steps"]}
    assert steps["compute"]["cache_hit"] is False
    assert any("the data file changed" in n for n in steps["compute"]["notes"])
    assert steps["rhale"]["cache_hit"] is False and steps["report"]["cache_hit"] is False
    assert len(manifest["history"]["runs"]) == 2
    html = (out / "report.html").read_text()
    moved = html[html.index('id="moved-table"') : html.index("</table>", html.index("moved-table"))]
    values = [float(v) for v in re.findall(r'data-sort="([0-9.e+-]+)"', moved)]
    assert values and max(values) > 0


def test_history_of_three_runs_lists_the_shifted_feature_first(cli, product_model, tmp_path):
    data = tmp_path / "data.csv"
    job = write_job(
        tmp_path / "job.yaml",
        model=str(product_model),
        data="data.csv",
        estimators=["rhale"],
        plots=False,
        report={"timestamp": False},
        keep=2,
    )
    out = tmp_path / "run"
    for seed_shift in ((0, 0.0), (1, 0.0), (1, 2.0)):  # run 3: x1 shifted by 2
        product_data(data, seed=seed_shift[0], shift_x1=seed_shift[1])
        result = cli("run", job, "-o", out, "--quiet")
        assert result.exit_code == 0 and result.output == "", result.output
    manifest = validated_manifest(out)
    assert len(manifest["history"]["runs"]) == 2 and len(manifest["history"]["pruned"]) == 1
    html = (out / "report.html").read_text()
    moved = html[html.index('id="moved-table"') :]
    order = re.findall(r'<a href="#feature-\d">([^<]+)</a>', moved[: moved.index("</table>")])
    # x0's slope is the mean of x1: it moved by 2 per unit of x0 (about 2 at the ends)
    assert order[0] == "x0"


def test_quiet_prints_nothing_on_success_and_one_line_on_error(cli, product_model, tmp_path):
    product_data(tmp_path / "data.csv")
    job = write_job(
        tmp_path / "job.yaml", model=str(product_model), data="data.csv", estimators=["rebin"],
        plots=False, report=False,
    )  # fmt: skip
    ok = cli("run", job, "-o", tmp_path / "run", "--quiet")
    assert ok.exit_code == 0 and ok.stdout == "" and ok.stderr == ""
    bad = write_job(tmp_path / "bad.yaml", model=str(product_model), data="data.csv",
                    estimators={"rebin": {"bins": 0}})  # fmt: skip
    result = cli("run", bad, "-o", tmp_path / "run", "--quiet")
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr.count("\n") == 1
    assert "estimators.rebin" in result.stderr and "bins" in result.stderr


def test_an_output_changed_by_hand_reruns_its_step_only(cli, product_model, tmp_path):
    product_data(tmp_path / "data.csv")
    job = write_job(tmp_path / "job.yaml", model=str(product_model), data="data.csv",
                    estimators=["rhale", "rebin"], plots={"formats": ["svg"]},
                    report={"timestamp": False})  # fmt: skip
    out = tmp_path / "run"
    assert cli("run", job, "-o", out).exit_code == 0
    (out / "plots/rebin/x1.svg").unlink()
    (out / "report.html").write_text("edited")
    assert cli("run", job, "-o", out).exit_code == 0
    manifest = validated_manifest(out)
    ran = [s["name"] for s in manifest["steps"] if not s["cache_hit"]]
    assert ran == ["plot-rebin", "report"]
    assert (out / "plots/rebin/x1.svg").is_file()


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"estimators": ["rhale"], "plot": {}}, "unknown key 'plot'"),
        ({}, "missing 'estimators'"),
        ({"estimators": ["kmeans"]}, "estimators: unknown key 'kmeans'"),
        ({"estimators": ["rhale"], "keep": 0}, "keep: must be at least 1, got 0"),
        ({"estimators": {"interact": {"pairs": ["a"]}}}, "estimators.interact"),
        ({"estimators": ["rhale"], "method": "fast"}, "method must be one of"),
    ],
)
def test_job_file_errors_name_the_file_and_field(cli, tmp_path, fields, message):
    job = write_job(tmp_path / "job.yaml", model="m.pt", data="d.csv", **fields)
    result = cli("run", job, "-o", tmp_path / "run")
    assert result.exit_code == 2
    assert result.stderr.startswith(f"error: job '{job}'"), result.stderr
    assert message in result.stderr


def test_a_held_lock_refuses_at_once(cli, product_model, tmp_path):
    product_data(tmp_path / "data.csv")
    job = write_job(tmp_path / "job.yaml", model=str(product_model), data="data.csv",
                    estimators=["rhale"], plots=False, report=False)  # fmt: skip
    out = tmp_path / "run"
    with run_lock(out):
        result = cli("run", job, "-o", out)
    assert result.exit_code == 1
    assert result.stderr == f"error: another 'ale run' holds '{out}' (pid {os.getpid()})\n"
    assert not (out / "run.json").exists()


def test_a_holder_that_has_not_yet_written_its_pid_is_named_once_it_has(tmp_path):
    import fcntl
    import threading

    from ale_cli.job.lock import LOCK_NAME, Locked

    tmp_path.joinpath(LOCK_NAME).touch()
    fd = os.open(tmp_path / LOCK_NAME, os.O_RDWR)  # a holder with the lock and an empty file
    fcntl.flock(fd, fcntl.LOCK_EX)
    later = threading.Timer(0.2, os.pwrite, (fd, b"4242\n", 0))
    later.start()
    try:
        with pytest.raises(Locked, match=r"\(pid 4242\)$"), run_lock(tmp_path):
            pass
    finally:
        later.join()
        os.close(fd)


def _start(job: Path, out: Path, *extra: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [sys.executable, "-m", "ale_cli", "run", str(job), "-o", str(out), *extra],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize("wait", [False, True])
def test_two_concurrent_runs_never_interleave(product_model, tmp_path, wait):
    product_data(tmp_path / "data.csv")
    job = write_job(tmp_path / "job.yaml", model=str(product_model), data="data.csv",
                    estimators=["rhale", "rebin"], plots={"formats": ["svg"]},
                    report={"timestamp": False})  # fmt: skip
    out = tmp_path / "run"
    extra = ("--wait",) if wait else ()
    procs = [_start(job, out, *extra) for _ in range(2)]
    results = [(p.wait(timeout=300), *p.communicate()) for p in procs]
    codes = sorted(code for code, _, _ in results)
    if wait:
        assert codes == [0, 0], results
    else:
        # one refuses at once, unless the first was done before the second started
        assert codes in ([0, 1], [0, 0]), results
        for code, stdout, stderr in results:
            if code == 1:
                assert stdout == ""
                assert re.fullmatch(
                    rf"error: another 'ale run' holds '{re.escape(str(out))}' \(pid \d+\)\n",
                    stderr,
                ), stderr
    manifest = validated_manifest(out)
    assert len(manifest["history"]["runs"]) == 1  # the same inputs: one run's summaries
    # no temporary files left (the lock and the figure directories' manifests are not)
    assert not [p for p in out.rglob(".*") if p.name not in (".lock", ".ale-plots.json")]


def test_api_run_returns_the_manifest(product_model, tmp_path):
    from ale_cli import api

    product_data(tmp_path / "data.csv")
    job = write_job(tmp_path / "job.yaml", model=str(product_model), data="data.csv",
                    estimators=["rhale"], plots=False, report=False, out="run")  # fmt: skip
    result = api.run(job)
    assert result.exit_code == 0 and result.out == tmp_path / "run"
    assert result.manifest == validated_manifest(tmp_path / "run")


def test_api_run_takes_a_model_object_in_place_of_the_job_files(product_model, tmp_path):
    """A torch module given to api.run equals the job's TorchScript file (the job file may
    leave out its model); a second run is a cache hit; a callable has no content hash."""
    import torch

    from ale_cli import api
    from ale_cli.errors import InputError

    product_data(tmp_path / "data.csv")
    opts = {"data": "data.csv", "estimators": ["rhale", "classic"], "plots": False}
    by_file = write_job(tmp_path / "file.yaml", model=str(product_model), **opts, report=False)
    by_object = write_job(tmp_path / "object.yaml", **opts, report=False)
    module = torch.jit.load(str(product_model))
    a = api.run(by_file, out=tmp_path / "a")
    b = api.run(by_object, out=tmp_path / "b", model=module)
    assert b.exit_code == 0 and b.manifest == validated_manifest(tmp_path / "b")
    assert b.manifest["inputs"]["model"]["path"] == "<RecursiveScriptModule object>"
    for name in ("rhale", "classic"):
        x0 = [api.read_summary(r.out / f"{name}.json").feature("x0") for r in (a, b)]
        np.testing.assert_allclose(x0[1].effect, x0[0].effect, rtol=0, atol=1e-12)
    again = api.run(by_object, out=tmp_path / "b", model=module)
    assert again.manifest["steps_run"] == 0
    with pytest.raises(
        InputError, match=r"^model is <callable .*<lambda>>, which has no content hash"
    ):
        api.run(by_object, out=tmp_path / "c", model=lambda X: X.sum(axis=1))


def test_discrete_key_reaches_compute_and_classic(cli, product_model, tmp_path):
    from ale_cli.store.npz import read_store

    rng = np.random.default_rng(3)
    frame = pd.DataFrame(
        {"x0": rng.uniform(-1, 1, 200), "x1": rng.integers(0, 3, 200).astype(float),
         "x2": rng.uniform(-1, 1, 200)}
    )  # fmt: skip
    frame.round(6).to_csv(tmp_path / "data.csv", index=False)
    fields = {"model": str(product_model), "data": "data.csv",
              "estimators": ["rebin", "classic"], "plots": False, "report": False}  # fmt: skip
    job = write_job(tmp_path / "job.yaml", **fields, discrete=["x1"])
    out = tmp_path / "run"
    assert cli("run", job, "-o", out).exit_code == 0
    store = read_store(out / "store.npz")
    assert [item["feature"] for item in store.meta["levels"]] == ["x1"]
    assert store.meta["options"]["discrete"] == ["x1"]
    classic = json.loads((out / "classic.json").read_text())
    x1 = next(f for f in classic["features"] if f["name"] == "x1")
    assert x1["kind"] == "discrete" and classic["params"]["discrete"] == ["x1"]
    # the known answer: f = x0 x1 + x2 moves by x0 per level of x1; the mean jump
    # between adjacent levels is the mean of x0 over the rows of those two levels
    x0, level = frame["x0"].round(6), frame["x1"]
    jumps = [x0[level.isin([k, k + 1])].mean() for k in (0, 1)]
    np.testing.assert_allclose(x1["bin_effect"], jumps, rtol=1e-9)
    np.testing.assert_allclose(np.diff(x1["effect"]), jumps, rtol=1e-9)
    # without the key both steps run again and x1 is binned as a number
    write_job(tmp_path / "job.yaml", **fields)
    assert cli("run", job, "-o", out).exit_code == 0
    manifest = validated_manifest(out)
    ran = {s["name"] for s in manifest["steps"] if not s["cache_hit"]}
    assert {"compute", "classic"} <= ran
    assert read_store(out / "store.npz").meta["levels"] == []


@pytest.mark.parametrize(
    ("value", "message"),
    [(3, "discrete: expected auto, none or a list of column names, got 3"),
     (["a", "a"], "discrete names 'a' more than once")],
)  # fmt: skip
def test_discrete_key_errors_name_the_field(cli, tmp_path, value, message):
    job = write_job(tmp_path / "job.yaml", model="m.pt", data="d.csv", estimators=["rhale"],
                    discrete=value)  # fmt: skip
    result = cli("run", job, "-o", tmp_path / "run")
    assert result.exit_code == 2 and message in result.stderr, result.stderr


def test_discrete_none_reaches_the_classic_step_as_written(product_model, tmp_path):
    from ale_cli.job import read_job

    product_data(tmp_path / "data.csv")
    job = write_job(tmp_path / "job.yaml", model=str(product_model), data="data.csv",
                    estimators=["classic"], discrete="none")  # fmt: skip
    assert read_job(job).estimators["classic"]["discrete"] == "none"


def test_a_missing_rules_file_is_refused_before_any_step(cli, product_model, tmp_path):
    product_data(tmp_path / "data.csv")
    job = write_job(tmp_path / "job.yaml", model=str(product_model), data="data.csv",
                    estimators=["rhale"], plots={"dpi": 120}, report=False,
                    audit={"rules": "missing-rules.yaml"})  # fmt: skip
    result = cli("run", job, "-o", tmp_path / "run")
    assert result.exit_code == 2
    assert result.stderr == (
        f"error: job '{job}': audit.rules: '{tmp_path / 'missing-rules.yaml'}' does not exist\n"
    )
    assert not (tmp_path / "run").exists()  # no lock, no store: nothing ran


@pytest.mark.parametrize(
    ("plots", "message"),
    [({"dpi": 5}, "plots.dpi: must be at least 30, got 5"),
     ({"formats": ["png", "gif"]}, "plots.formats[1]: must be one of png, svg, got 'gif'"),
     ({"overview_only": ["rebin"]}, "plots.overview_only: 'rebin' is not an estimator of the job"),
     ({"overview_only": ["regional"]},
      "plots.overview_only[0]: must be one of rhale, rebin, classic, got 'regional'")],
)  # fmt: skip
def test_plot_options_in_a_job_have_the_limits_of_ale_plot(cli, tmp_path, plots, message):
    job = write_job(tmp_path / "job.yaml", model="m.pt", data="d.csv", estimators=["rhale"],
                    plots=plots)  # fmt: skip
    result = cli("run", job, "-o", tmp_path / "run")
    assert result.exit_code == 2 and result.stderr == f"error: job '{job}': {message}\n"
    if "dpi" in plots:
        flag = cli("plot", tmp_path / "s.json", "-o", tmp_path / "p", "--dpi", "5")
        assert flag.exit_code == 2 and "30" in flag.stderr  # the command's own limit


def test_a_dropped_estimator_leaves_no_outputs_but_an_edited_one_is_kept(
    cli, product_model, tmp_path
):
    product_data(tmp_path / "data.csv")
    fields = {"model": str(product_model), "data": "data.csv", "plots": {"formats": ["svg"]},
              "report": False}  # fmt: skip
    job = write_job(tmp_path / "job.yaml", estimators=["rhale", "rebin"], **fields)
    out = tmp_path / "run"
    assert cli("run", job, "-o", out).exit_code == 0
    (out / "rebin.json").write_text((out / "rebin.json").read_text() + "\n")  # someone's edit
    write_job(tmp_path / "job.yaml", estimators=["rhale"], **fields)
    assert cli("run", job, "-o", out).exit_code == 0
    manifest = validated_manifest(out)
    assert [s["name"] for s in manifest["steps"]] == ["compute", "rhale", "plot-rhale"]
    assert not (out / "plots" / "rebin").exists()  # ours, unchanged: removed
    assert (out / "rebin.json").is_file()  # changed since it was written: left


def test_a_model_giving_nan_fails_the_run_with_exit_1_naming_each_kind_once(cli, tmp_path):
    """log(x0) + x1 * s is NaN at x0 < 0 (rows 2, 6) and -inf at x0 = 0 (row 1, where its
    gradient 1/x0 is infinite too); moving the binary s keeps those rows non-finite. A
    failure while running: exit 1 as under 'ale compute' (not a job file error), the
    jumps up and down named once, no numpy warning (inf - inf) before the error line."""
    import warnings

    import torch

    class LogPlus(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.log(x[:, 0]) + x[:, 1] * x[:, 2]

    model = tmp_path / "log.pt"
    torch.jit.save(torch.jit.script(LogPlus().double()), str(model))
    x0, x1 = [1.0, 0.0, -1.0, 2.0, 3.0, 0.5, -2.0, 4.0], [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8]
    frame = {"x0": x0, "x1": x1, "s": [0, 1, 0, 1, 0, 1, 1, 0]}
    pd.DataFrame(frame).to_csv(tmp_path / "data.csv", index=False)
    job = write_job(tmp_path / "job.yaml", model=str(model), data="data.csv",
                    estimators=["rhale"], plots=False, report=False)  # fmt: skip
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = cli("run", job, "-o", tmp_path / "run")
    assert [str(w.message) for w in caught if w.category is RuntimeWarning] == []
    assert result.exit_code == 1
    assert result.stderr == (
        f"error: job '{job}': model '{model}' gave NaN or infinite predictions on 3 rows "
        "(rows 1, 2, 6) and local effects on 1 row (row 1) and jumps to the adjacent levels "
        "on 3 rows (rows 1, 2, 6); pass drop_nonfinite to leave those rows out, or fix the "
        "model there\n"
    )
    assert not (tmp_path / "run" / "run.json").exists()


def test_published_files_and_messages_name_the_run_directory_not_its_staging(
    cli, product_model, tmp_path
):
    """The steps run in DIR/.next-<hex>/, which the commit moves away: every path the run
    publishes (a summary's store, the audit's summaries, the report's regional source) or
    prints in an error is DIR's own."""
    product_data(tmp_path / "data.csv")
    rules = tmp_path / "rules.yaml"
    rules.write_text("rules:\n  - feature: '*'\n    not_estimable: fail\n")
    job = write_job(tmp_path / "job.yaml", model=str(product_model), data="data.csv",
                    estimators={"rhale": None, "regional": {"max_depth": 1}}, plots=False,
                    audit={"rules": str(rules)}, report={"timestamp": False})  # fmt: skip
    out = tmp_path / "run"
    assert cli("run", job, "-o", out).exit_code == 0
    for name in ("rhale", "regional"):
        summary = json.loads((out / f"{name}.json").read_text())
        assert summary["store"]["path"] == f"{out}/store.npz"
    audit = json.loads((out / "audit.json").read_text())
    assert audit["summaries"] == [f"{out}/rhale.json", f"{out}/regional.json"]
    assert {c["summary"] for c in audit["checks"]} == set(audit["summaries"])
    assert f"From <code>{out}/regional.json</code>" in (out / "report.html").read_text()
    assert not [p for p in out.rglob("*") if p.is_file() and b".next-" in p.read_bytes()]

    pd.read_csv(tmp_path / "data.csv").rename(columns={"x2": "z"}).to_csv(
        tmp_path / "other.csv", index=False
    )  # the first run's rhale.json has edges for x2, which this store does not have
    edges = tmp_path / "edges.json"
    edges.write_bytes((out / "rhale.json").read_bytes())
    other = write_job(tmp_path / "other.yaml", model=str(product_model), data="other.csv",
                      estimators={"rebin": {"edges": str(edges)}}, plots=False,
                      report=False)  # fmt: skip
    result = cli("run", other, "-o", tmp_path / "other")
    assert result.exit_code == 2
    assert result.stderr == (
        f"error: job '{other}': edges file '{edges}' has edges for 'x2', which the store "
        f"'{tmp_path / 'other' / 'store.npz'}' does not have; choose the features to explain "
        "with estimators.rebin.features\n"
    )
