"""The report takes the figures the plot step drew (``ale run``) instead of drawing them again,
and draws any figure that is missing or was changed after the step wrote it."""

from __future__ import annotations

import base64
import re

from test_report import EVIL, run_files  # noqa: F401  (tests/ is on sys.path; the fixture)

from ale_cli.plot.render import plot_files
from ale_cli.report import build_report
from ale_cli.report.figures import rendered_figures
from ale_cli.summary.model import read_summary

SVG = re.compile(r'<svg[^>]* class="figure"')
IMG = re.compile(
    r'<img class="figure" alt="([^"]*)" src="data:image/(png|svg\+xml);base64,([^"]+)">'
)


def test_the_report_takes_each_figure_the_plot_step_drew(run_files, tmp_path) -> None:  # noqa: F811
    rebin = run_files["rebin"]
    plots = tmp_path / "plots"
    written = plot_files(rebin, plots, store_path=run_files["store"], formats=("png",))
    html = build_report([rebin], store=run_files["store"], figures={rebin: plots}).html
    images = IMG.findall(html)
    # three features and the overview, each the very bytes of its file
    assert len(images) == 4 and not SVG.search(html)
    files = {p.read_bytes() for p in written.paths}
    assert {base64.b64decode(data) for _, _, data in images} == files
    assert {alt for alt, _, _ in images} == {
        "feature &lt;script&gt;alert(1)&lt;/script&gt;",
        "feature b",
        "feature c",
        "overview",
    }
    assert EVIL not in html


def test_a_figure_changed_after_the_plot_step_is_drawn_again(run_files, tmp_path) -> None:  # noqa: F811
    rebin = run_files["rebin"]
    plots = tmp_path / "plots"
    plot_files(rebin, plots, store_path=run_files["store"], formats=("png",))
    (plots / "b.png").write_bytes(b"not the figure the step drew")
    (plots / "overview.png").unlink()
    taken = rendered_figures(read_summary(rebin), plots)
    assert set(taken) == {("feature", EVIL), ("feature", "c")}
    html = build_report([rebin], store=run_files["store"], figures={rebin: plots}).html
    assert len(IMG.findall(html)) == 2 and len(SVG.findall(html)) == 2


def test_a_directory_without_a_manifest_gives_nothing(run_files, tmp_path) -> None:  # noqa: F811
    (tmp_path / "plots").mkdir()
    (tmp_path / "plots" / "b.png").write_bytes(b"\x89PNG")
    assert rendered_figures(read_summary(run_files["rebin"]), tmp_path / "plots") == {}
