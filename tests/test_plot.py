"""``ale plot`` and ale_cli.plot: the plotted data equals the summary, files are reproducible.

Summaries are built by hand with known numbers (no estimator involved): a
linear feature of slope 2 on four unit bins, a feature with an empty
(filled) bin, a constant (not estimable) feature, a 100-bin feature and a
feature with a 40-character name; the store holds rows placed in known bins.
"""

from __future__ import annotations

import doctest
import struct
import subprocess
import sys
import xml.etree.ElementTree as ET
import zlib
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from ale_cli.cli import app
from ale_cli.errors import InputError, RunError
from ale_cli.store.npz import Store, write_store
from ale_cli.summary.model import FeatureSummary, Summary, write_summary

LONG = "mean_arterial_pressure_at_admission_mmHg"  # 40 characters
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
runner = CliRunner()
PLOT = ["plot", "--jobs", "1"]  # in-process: never fork the test process


@pytest.fixture(autouse=True)
def agg():
    """Agg backend; every figure closed (and pyplot's list emptied) after each test."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    yield
    plt.close("all")


# ---------------------------------------------------------------- known summaries


def linear_feature(name: str = "lin") -> FeatureSummary:
    """Slope 2 on edges 0..4; bin std 0.5 with 10 rows per bin; count-weighted centering."""
    edges = np.array([0.0, 1.0, 2.0, 3.0, 4.0])
    std = 0.5 * np.sqrt(np.arange(5))  # sqrt(sum_{j<=k} 1^2 * 0.5^2)
    return FeatureSummary(
        name=name,
        edges=edges,
        counts=np.array([10, 10, 10, 10]),
        bin_effect=np.full(4, 2.0),
        bin_std=np.full(4, 0.5),
        bin_stderr=np.full(4, 0.5 / np.sqrt(10)),
        bin_filled=np.zeros(4, dtype=bool),
        effect=2.0 * edges - 4.0,  # segment midpoints 1, 3, 5, 7 have mean 4
        std=std,
        stderr=std / np.sqrt(10),
        center_offset=4.0,
    )


def gap_feature() -> FeatureSummary:
    """Three bins, the middle one empty and filled with the interpolated effect 0.5."""
    return FeatureSummary(
        name="gap",
        edges=np.array([0.0, 1.0, 2.0, 3.0]),
        counts=np.array([5, 0, 5]),
        bin_effect=np.array([1.0, 0.5, 0.0]),
        bin_std=np.array([0.2, np.nan, 0.2]),
        bin_stderr=np.array([0.2 / np.sqrt(5), np.nan, 0.2 / np.sqrt(5)]),
        bin_filled=np.array([False, True, False]),
        effect=np.array([-0.75, 0.25, 0.75, 0.75]),
        std=np.array([0.0, 0.2, 0.2, np.sqrt(0.08)]),
        stderr=np.array([0.0, 0.2, 0.2, np.sqrt(0.08)]) / np.sqrt(5),
        center_offset=0.75,
    )


def many_bins_feature(k: int = 100, name: str = "many") -> FeatureSummary:
    edges = np.linspace(-3.0, 3.0, k + 1)
    centres = (edges[:-1] + edges[1:]) / 2
    mu = np.cos(centres)
    effect = np.concatenate([[0.0], np.cumsum(mu * np.diff(edges))])
    std = 0.3 * np.sqrt(np.arange(k + 1) * np.diff(edges)[0] ** 2)
    return FeatureSummary(
        name=name,
        edges=edges,
        counts=np.full(k, 20),
        bin_effect=mu,
        bin_std=np.full(k, 0.3),
        bin_stderr=np.full(k, 0.3 / np.sqrt(20)),
        bin_filled=np.zeros(k, dtype=bool),
        effect=effect - effect.mean(),
        std=std,
        stderr=std / np.sqrt(20),
    )


CONST = FeatureSummary(
    name="const", status="not_estimable", reason="the feature is constant (every value is 1.0)"
)


def store_rows() -> tuple[np.ndarray, np.ndarray]:
    """Values and local effects of ``lin`` in known bins of edges 0..4.

    bin 0: 6 rows incl. x = 0 (z_0) and x = 1 (right-closed), effects span [1.5, 3.0];
    bin 1: 3 rows (too few for a violin); bin 2: 1200 rows (subsampled);
    bin 3: 6 rows, all effects 2.0 (no spread); one row at x = 5 outside the bins.
    """
    rng = np.random.default_rng(7)
    x = np.concatenate(
        [
            [0.0, 0.2, 0.4, 0.6, 0.8, 1.0],
            [1.5, 1.5, 1.5],
            rng.uniform(2.0, 3.0, 1200),
            np.linspace(3.1, 4.0, 6),
            [5.0],
        ]
    )
    le = np.concatenate(
        [
            [2.0, 1.5, 2.5, 2.0, 1.8, 3.0],
            [2.0, 2.1, 1.9],
            rng.normal(2.0, 0.5, 1200),
            np.full(6, 2.0),
            [-40.0],
        ]
    )
    return x, le


def make_store(names: tuple[str, ...] = ("lin", "gap", "const", LONG, "many")) -> Store:
    x, le = store_rows()
    n = len(x)
    rng = np.random.default_rng(1)
    X = rng.uniform(0.0, 3.0, (n, len(names)))
    LE = rng.normal(0.0, 1.0, (n, len(names)))
    if "lin" in names:
        X[:, names.index("lin")] = x
        LE[:, names.index("lin")] = le
    return Store(
        X=X,
        local_effects=LE,
        prediction=np.linspace(90.0, 110.0, n),  # mean 100
        feature_names=names,
        meta={"schema_version": 1, "n_rows": n, "output": {"selector": None, "shape": [n]}},
    )


def make_summary(
    features: tuple[FeatureSummary, ...] | None = None,
    *,
    estimator: str = "rhale",
    params: dict | None = None,
    n_rows: int | None = None,
) -> Summary:
    if features is None:
        features = (
            linear_feature(),
            gap_feature(),
            CONST,
            linear_feature(LONG),
            many_bins_feature(),
        )
    return Summary(
        estimator=estimator,
        params=params or {},
        store={"path": "store.npz", "output": {"name": "disease progression"}},
        n_rows=n_rows if n_rows is not None else len(store_rows()[0]),
        features=features,
    )


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    summary_path, store_path = tmp_path / "summary.json", tmp_path / "store.npz"
    write_summary(summary_path, make_summary(), timestamp=False)
    write_store(store_path, make_store())
    return summary_path, store_path


def by_gid(fig, gid: str):
    found = fig.findobj(lambda a: a.get_gid() == gid)
    assert len(found) == 1, f"{len(found)} artists with gid {gid!r}"
    return found[0]


def invoke_plot(summary_path: Path, store_path: Path, out: Path, *extra: str):
    result = runner.invoke(
        app, [*PLOT, str(summary_path), "--store", str(store_path), "-o", str(out), *extra]
    )
    assert result.exit_code == 0, result.output
    return result


def legend_texts(fig) -> list[str]:
    return [t.get_text() for t in by_gid(fig, "legend").get_texts()]


# ---------------------------------------------------------------- plotted data


def test_curve_band_and_stderr_lines_equal_the_summary():
    from ale_cli.plot import feature_figure

    fig = feature_figure(make_summary(), "lin")
    edges = np.array([0.0, 1.0, 2.0, 3.0, 4.0])
    effect = 2.0 * edges - 4.0
    std = 0.5 * np.sqrt([0, 1, 2, 3, 4])
    curve = by_gid(fig, "effect")
    np.testing.assert_allclose(curve.get_xdata(), edges)
    np.testing.assert_allclose(curve.get_ydata(), effect)
    verts = by_gid(fig, "std_band").get_paths()[0].vertices
    for x, lo, hi in zip(edges, effect - std, effect + std, strict=True):
        ys = verts[np.isclose(verts[:, 0], x), 1]
        np.testing.assert_allclose([ys.min(), ys.max()], [lo, hi])
    for gid, sign in (("stderr_upper", 1), ("stderr_lower", -1)):
        line = by_gid(fig, gid)
        assert line.get_linestyle() == "--"
        np.testing.assert_allclose(line.get_ydata(), effect + sign * 2 * std / np.sqrt(10))


def test_bars_are_the_bins_with_std_whiskers():
    from ale_cli.plot import feature_figure

    fig = feature_figure(make_summary(), "lin")
    for k in range(4):
        rect = by_gid(fig, f"bin_{k}")
        np.testing.assert_allclose([rect.get_x(), rect.get_width(), rect.get_height()], [k, 1, 2])
    segments = by_gid(fig, "bin_std").get_segments()
    np.testing.assert_allclose(
        np.array(segments), [[[k + 0.5, 1.5], [k + 0.5, 2.5]] for k in range(4)]
    )


def test_filled_bin_is_hatched_grey_and_explained_in_the_legend():
    from matplotlib.colors import to_hex

    from ale_cli.plot import feature_figure, style

    fig = feature_figure(make_summary(), "gap")
    heights = [by_gid(fig, f"bin_{k}").get_height() for k in range(3)]
    np.testing.assert_allclose(heights, [1.0, 0.5, 0.0])
    filled = by_gid(fig, "bin_1")
    assert filled.get_hatch() == "///"
    assert to_hex(filled.get_facecolor()) == style.FILLED.lower()
    assert not by_gid(fig, "bin_0").get_hatch()
    # the empty bin has no std: no whisker for it
    np.testing.assert_allclose(
        np.array(by_gid(fig, "bin_std").get_segments()),
        [[[0.5, 0.8], [0.5, 1.2]], [[2.5, -0.2], [2.5, 0.2]]],
    )
    assert "empty bin, effect interpolated" in legend_texts(fig)
    assert "K = 3 bins, 1 empty" in fig.axes[0].get_title(loc="left")


def test_violins_hold_the_local_effects_of_their_bin():
    from matplotlib.collections import PolyCollection
    from matplotlib.lines import Line2D

    from ale_cli.plot import feature_figure

    x, le = store_rows()
    fig = feature_figure(make_summary(), "lin", store=make_store())
    # bin 0 includes z_0 = 0 and the right edge x = 1 (effect 3.0, the bin's maximum)
    body = by_gid(fig, "violin_0")
    assert isinstance(body, PolyCollection)
    verts = body.get_paths()[0].vertices
    np.testing.assert_allclose([verts[:, 1].min(), verts[:, 1].max()], [1.5, 3.0])
    np.testing.assert_allclose((verts[:, 0].min() + verts[:, 0].max()) / 2, 0.5)
    assert verts[:, 0].max() - verts[:, 0].min() <= 0.9 + 1e-9
    # bin 1 has 3 rows: too few for a violin
    assert not fig.findobj(lambda a: a.get_gid() == "violin_1")
    # bin 2 has 1200 rows, subsampled with the extremes kept
    in_bin2 = (x > 2.0) & (x <= 3.0)
    verts = by_gid(fig, "violin_2").get_paths()[0].vertices
    np.testing.assert_allclose(
        [verts[:, 1].min(), verts[:, 1].max()], [le[in_bin2].min(), le[in_bin2].max()]
    )
    # bin 3: all effects 2.0, a flat mark across the bin's violin width
    flat = by_gid(fig, "violin_3")
    assert isinstance(flat, Line2D)
    np.testing.assert_allclose(flat.get_ydata(), [2.0, 2.0])
    np.testing.assert_allclose(flat.get_xdata(), [3.5 - 0.45, 3.5 + 0.45])
    # the row at x = 5 is in no bin, and the figure says so
    assert by_gid(fig, "outside_note").get_text().startswith("1 rows outside")


def test_rug_shows_the_data_values_and_subsamples_deterministically():
    from ale_cli.plot import feature_figure
    from ale_cli.plot.marks import RUG_MAX

    x, _ = store_rows()
    fig = feature_figure(make_summary(), "lin", store=make_store())
    np.testing.assert_allclose(by_gid(fig, "rug").get_xdata(), np.sort(x))

    big = make_store()
    rng = np.random.default_rng(3)
    n = 3 * RUG_MAX
    values = rng.normal(size=n)
    big = Store(
        X=np.tile(values[:, None], (1, 5)),
        local_effects=np.zeros((n, 5)),
        prediction=np.zeros(n),
        feature_names=big.feature_names,
        meta=big.meta,
    )
    summary = make_summary(n_rows=n)
    rugs = [by_gid(feature_figure(summary, "lin", store=big), "rug").get_xdata() for _ in range(2)]
    assert len(rugs[0]) == RUG_MAX
    np.testing.assert_array_equal(rugs[0], rugs[1])
    assert set(rugs[0]) <= set(values)
    np.testing.assert_allclose([rugs[0][0], rugs[0][-1]], [values.min(), values.max()])
    assert f"data values ({RUG_MAX:,} of {n:,} rows)" in legend_texts(
        feature_figure(summary, "lin", store=big)
    )


def test_average_prediction_line_only_with_default_centering():
    from ale_cli.plot import feature_figure

    fig = feature_figure(make_summary(), "lin", store=make_store())
    np.testing.assert_allclose(by_gid(fig, "mean_prediction").get_ydata(), [0, 0])
    assert "average prediction (100)" in legend_texts(fig)
    start = make_summary(params={"center": "start"})
    fig = feature_figure(start, "lin", store=make_store())
    assert not fig.findobj(lambda a: a.get_gid() == "mean_prediction")
    assert not feature_figure(make_summary(), "lin").findobj(lambda a: a.get_gid() == "rug")


def test_legend_explains_every_mark_and_titles_name_the_estimator():
    from ale_cli.plot import feature_figure

    fig = feature_figure(make_summary(), "lin", store=make_store())
    assert legend_texts(fig) == [
        "ALE (centered effect)",
        "± STD (heterogeneity)",
        "± 2 SE (estimation uncertainty)",
        "data values (all 1,216 rows)",
        "average prediction (100)",
        "bin effect (mean local effect)",
        "± bin std",
        "local effects per bin (bins with ≥ 5 rows)",
    ]
    top, bottom = fig.axes
    assert top.get_title(loc="left") == "RHALE, automatic bins, K = 4 bins, N = 1,216 rows"
    assert top.get_ylabel() == "centered effect on disease progression"
    assert bottom.get_xlabel() == "lin"
    assert fig.get_suptitle() == "lin"
    for estimator, label in (("dale", "DALE, fixed bins"), ("ale", "classic ALE")):
        fig = feature_figure(make_summary(estimator=estimator), "lin")
        assert fig.axes[0].get_title(loc="left").startswith(label)


def test_not_estimable_feature_gets_a_note_not_a_crash():
    from ale_cli.plot import feature_figure

    fig = feature_figure(make_summary(), "const", store=make_store())
    assert by_gid(fig, "not_estimable").get_text() == (
        "const: not estimable\nthe feature is constant (every value is 1.0)"
    )
    assert not fig.axes


def test_overview_has_one_panel_per_feature_on_a_common_scale():
    from ale_cli.plot import overview_figure

    summary = make_summary()
    fig = overview_figure(summary)
    panels = [by_gid(fig, f"f{i}.axes") for i in range(5)]
    assert [ax.get_title() for ax in panels][:3] == ["lin", "gap", "const"]
    for i, feat in enumerate(summary.features):
        if feat.status == "ok":
            np.testing.assert_allclose(by_gid(fig, f"f{i}.effect").get_ydata(), feat.effect)
            np.testing.assert_allclose(by_gid(fig, f"f{i}.effect").get_xdata(), feat.edges)
    assert by_gid(fig, "f2.not_estimable").get_text().startswith("not estimable\nthe feature")
    ylims = {panels[i].get_ylim() for i in (0, 1, 3, 4)}
    assert len(ylims) == 1
    assert legend_texts(fig) == [
        "ALE (centered effect)",
        "± STD (heterogeneity)",
        "± 2 SE (estimation uncertainty)",
    ]
    sub = overview_figure(summary, names=["gap", "lin"])
    assert [ax.get_title() for ax in sub.axes if ax.get_visible()] == ["gap", "lin"]


def _boxes(fig):
    renderer = fig.canvas.get_renderer()
    fig.draw(renderer)
    return renderer


@pytest.mark.parametrize("name", ["many", LONG])
def test_text_does_not_overlap_with_many_bins_or_a_long_name(name):
    from ale_cli.plot import feature_figure

    features = (many_bins_feature(name=name),)
    fig = feature_figure(make_summary(features), name, store=make_store())
    renderer = _boxes(fig)
    top, bottom = fig.axes
    texts = [
        fig._suptitle,
        top.title if top.title.get_text() else top._left_title,
        top._left_title,
        top.yaxis.label,
        bottom.yaxis.label,
        bottom.xaxis.label,
    ]
    boxes = [t.get_window_extent(renderer) for t in texts if t.get_text()]
    legend = by_gid(fig, "legend").get_window_extent(renderer)
    fig_box = fig.bbox
    for box in [*boxes, legend]:
        assert fig_box.x0 - 1 <= box.x0 and box.x1 <= fig_box.x1 + 1, "text leaves the figure"
        assert fig_box.y0 - 1 <= box.y0 and box.y1 <= fig_box.y1 + 1, "text leaves the figure"
    assert not legend.overlaps(bottom.xaxis.label.get_window_extent(renderer))
    assert not legend.overlaps(bottom.get_window_extent(renderer))
    assert not fig._suptitle.get_window_extent(renderer).overlaps(
        top._left_title.get_window_extent(renderer)
    )
    for ax in (top, bottom):
        ticks = [t.get_window_extent(renderer) for t in ax.get_xticklabels() if t.get_text()]
        ticks += [t.get_window_extent(renderer) for t in ax.get_yticklabels() if t.get_text()]
        for i, a in enumerate(ticks):
            for b in ticks[i + 1 :]:
                assert not a.overlaps(b), "tick labels overlap"


def test_overview_titles_of_long_names_do_not_overlap():
    from ale_cli.plot import overview_figure

    names = [f"{LONG}_{i}" for i in range(6)]
    fig = overview_figure(make_summary(tuple(linear_feature(n) for n in names)))
    renderer = _boxes(fig)
    titles = [ax.title.get_window_extent(renderer) for ax in fig.axes if ax.get_visible()]
    for i, a in enumerate(titles):
        for b in titles[i + 1 :]:
            assert not a.overlaps(b)
    axes = [ax.get_window_extent(renderer) for ax in fig.axes if ax.get_visible()]
    for t in titles:
        assert not any(t.overlaps(a) for a in axes)


# ---------------------------------------------------------------- files


def png_chunks(data: bytes) -> list[tuple[bytes, bytes]]:
    assert data[:8] == PNG_SIGNATURE
    chunks, pos = [], 8
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + length]
        (crc,) = struct.unpack(">I", data[pos + 8 + length : pos + 12 + length])
        assert zlib.crc32(kind + body) == crc
        chunks.append((kind, body))
        pos += 12 + length
    return chunks


@pytest.mark.parametrize("dpi", [72, 200])
def test_png_has_the_signature_the_requested_dpi_and_no_timestamp(tmp_path, files, dpi):
    summary_path, store_path = files
    result = runner.invoke(
        app,
        [
            *PLOT,
            str(summary_path),
            "--store",
            str(store_path),
            "-o",
            str(tmp_path / "out"),
            "--dpi",
            str(dpi),
            "--features",
            "lin",
        ],
    )
    assert result.exit_code == 0, result.output
    from ale_cli.plot import feature_figure, overview_figure

    sizes = {
        "lin": feature_figure(make_summary(), "lin", store=make_store()).get_size_inches(),
        "overview": overview_figure(make_summary(), names=["lin"]).get_size_inches(),
    }
    assert sizes["lin"][0] == 7.5
    for stem, size in sizes.items():
        chunks = dict(png_chunks((tmp_path / "out" / f"{stem}.png").read_bytes()))
        x_ppm, y_ppm, unit = struct.unpack(">IIB", chunks[b"pHYs"])
        assert unit == 1  # metres
        np.testing.assert_allclose([x_ppm, y_ppm], [dpi / 0.0254] * 2, atol=1)
        width, height = struct.unpack(">II", chunks[b"IHDR"][:8])
        np.testing.assert_allclose([width, height], size * dpi, atol=1)  # pixels, truncated
        assert b"tIME" not in chunks
        assert chunks[b"tEXt"] == b"Software\x00ale"  # the tool, not its version


def test_svg_parses_as_xml_without_a_date(tmp_path, files):
    summary_path, store_path = files
    out = tmp_path / "svg"
    invoke_plot(summary_path, store_path, out, "--format", "svg")
    svgs = sorted(out.glob("*.svg"))
    assert len(svgs) == 6
    for path in svgs:
        root = ET.parse(path).getroot()
        assert root.tag == "{http://www.w3.org/2000/svg}svg"
        text = path.read_text(encoding="utf-8")
        assert "<dc:date>" not in text and "Matplotlib v" not in text


def test_two_runs_write_byte_identical_svgs(tmp_path, files):
    summary_path, store_path = files
    args = ["plot", str(summary_path), "--store", str(store_path), "--format", "svg"]
    first = runner.invoke(app, [*args, "-o", str(tmp_path / "a"), "--jobs", "1"])
    assert first.exit_code == 0, first.output
    # the second run in a fresh process, drawing with two worker processes, so
    # parallel drawing is checked against serial drawing too
    subprocess.run(
        [sys.executable, "-m", "ale_cli", *args, "-o", str(tmp_path / "b"), "--jobs", "2"],
        check=True,
        capture_output=True,
    )
    names = sorted(p.name for p in (tmp_path / "a").iterdir())
    assert names == sorted(p.name for p in (tmp_path / "b").iterdir())
    for name in names:
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name


def test_two_runs_write_identical_pngs(tmp_path, files):
    summary_path, store_path = files
    for sub in ("a", "b"):
        result = runner.invoke(
            app, [*PLOT, str(summary_path), "--store", str(store_path), "-o", str(tmp_path / sub)]
        )
        assert result.exit_code == 0, result.output
    for path in (tmp_path / "a").iterdir():
        assert path.read_bytes() == (tmp_path / "b" / path.name).read_bytes(), path.name


SVG = "{http://www.w3.org/2000/svg}"


def svg_texts(path: Path) -> list[str]:
    """The text of every <text> element of an SVG file, in document order."""
    root = ET.parse(path).getroot()
    return ["".join(el.itertext()) for el in root.iter(f"{SVG}text")]


def test_svg_labels_are_text_elements_in_a_font_stack_browsers_have(tmp_path, files):
    summary_path, store_path = files
    out = tmp_path / "svg"
    invoke_plot(summary_path, store_path, out, "--format", "svg", "--features", f"lin,{LONG}")
    for name in ("lin", LONG):
        texts = svg_texts(out / f"{name}.svg")
        assert name in texts  # the x label and the title, as text a browser can search
        assert "centered effect on disease progression" in texts
        assert "ALE (centered effect)" in texts
    overview = svg_texts(out / "overview.svg")
    assert "lin" in overview
    # the overview's cell title is wrapped: two lines, two <text> elements
    assert LONG in {a + b for a, b in zip(overview, overview[1:], strict=False)}
    root = ET.parse(out / "lin.svg").getroot()
    styles = [el.get("style", "") for el in root.iter(f"{SVG}text")]
    assert styles and all("font-family: 'DejaVu Sans', sans-serif" in st for st in styles)
    # no glyph outlines: text is not drawn as paths
    assert not [el for el in root.iter(f"{SVG}path") if (el.get("id") or "").startswith("DejaVu")]


def test_dollar_signs_in_names_are_text_not_tex(tmp_path):
    from ale_cli.plot import feature_figure
    from ale_cli.plot.directory import save_figure

    name = "price ($) per $unit"
    fig = feature_figure(make_summary((linear_feature(name),)), name)
    save_figure(fig, tmp_path / "f.svg", "svg", dpi=72)
    assert name in svg_texts(tmp_path / "f.svg")
    assert fig.axes[1].xaxis.label.get_text() == name
    assert fig.axes[1].xaxis.label.get_parse_math() is False


def test_a_reused_feature_figure_saves_the_bytes_of_a_new_one(tmp_path):
    """What a plot worker does, drawing each feature into the last feature figure, leaves
    nothing of the one before (violins, rug, filled bins, notes, 100 bins, limits): each
    PNG is the bytes of a new figure's, features in either order, with and without store."""
    from ale_cli.plot.directory import save_figure
    from ale_cli.plot.first_order import feature_figure, release

    summary, store = make_summary(), make_store()
    names = [f.name for f in summary.features]
    reused = set()
    for name in [*names, *names[::-1]]:
        for with_store in (store, None):
            pngs = []
            for reuse in (False, True):
                fig = feature_figure(summary, name, store=with_store, reuse=reuse)
                save_figure(fig, tmp_path / f"{reuse}.png", "png", dpi=50)
                pngs.append((tmp_path / f"{reuse}.png").read_bytes())
            assert pngs[0] == pngs[1], (name, with_store is not None)
            if name != "const":
                reused.add(id(fig))
    assert len(reused) == 1  # one figure drawn into for every estimable feature
    release()


def test_svg_renders_in_one_process_are_byte_identical(tmp_path):
    from ale_cli.plot import feature_figure
    from ale_cli.plot.directory import save_figure

    paths = [tmp_path / "a.svg", tmp_path / "b.svg"]
    for path in paths:
        save_figure(feature_figure(make_summary(), "gap", store=make_store()), path, "svg", dpi=72)
    assert paths[0].read_bytes() == paths[1].read_bytes()
    assert "gap" in svg_texts(paths[0])


def test_ylabel_labels_every_effect_axis():
    from ale_cli.plot import feature_figure, interaction_figure, overview_figure

    label = "risk score (points)"
    fig = feature_figure(make_summary(), "lin", store=make_store(), ylabel=label)
    assert by_gid(fig, "effect_axes").get_ylabel() == label
    assert by_gid(fig, "bins_axes").get_ylabel() == "bin effect\n(d output / d feature)"
    overview = overview_figure(make_summary(), ylabel=label)
    ylabels = [by_gid(overview, f"f{i}.axes").get_ylabel() for i in range(5)]
    assert ylabels == [label, "", "", "", label]  # the first column of 4
    heat = interaction_figure(interaction_summary(), ("lin", "gap"), ylabel=label)
    assert by_gid(heat, "colorbar").get_ylabel() == label
    long = "a label " * 20
    wrapped = by_gid(feature_figure(make_summary(), "lin", ylabel=long), "effect_axes")
    lines = wrapped.get_ylabel().split("\n")
    assert len(lines) == 2 and lines[1].endswith("…") and max(map(len, lines)) <= 45


def interaction_summary(output: object = None) -> Summary:
    from ale_cli.summary.model import InteractionSummary

    ea, eb = np.array([0.0, 1.0, 2.0]), np.array([0.0, 1.0, 3.0])
    item = InteractionSummary(
        features=("lin", "gap"),
        estimator="dale",
        edges_a=ea,
        edges_b=eb,
        counts=np.ones((2, 2), dtype=np.int64),
        cell_effect=np.zeros((2, 2)),
        filled=np.zeros((2, 2), dtype=bool),
        effect=np.outer(ea - 1.0, eb - 1.0),
    )
    store = {} if output is None else {"output": output}
    return Summary(
        estimator="dale", params={}, store=store, n_rows=10, features=(), interactions=(item,)
    )


SKLEARN_PROBA = {
    "selector": "proba:1",
    "kind": "proba",
    "column": 1,
    "class": "1",
    "name": "proba:1",
}


@pytest.mark.parametrize(
    ("output", "params", "feature", "overview", "heat"),
    [
        (
            SKLEARN_PROBA,
            {},
            "centered effect on probability of class 1",
            "effect on probability of class 1",
            "doubly-centered effect on probability of class 1",
        ),
        (
            {"selector": None, "kind": "predict", "column": None, "name": "predict"},
            {"center": "start"},
            "effect on prediction",
            "effect on prediction",
            "doubly-centered effect on prediction",
        ),
        (
            {"selector": "2", "shape": [100, 3]},
            {"center": "mean"},
            "centered effect on output 2",
            "effect on output 2",
            "doubly-centered effect on output 2",
        ),
        (
            None,
            {},
            "centered effect on the model output",
            "effect on the model output",
            "doubly-centered effect on the model output",
        ),
    ],
)
def test_default_ylabel_names_the_recorded_output(output, params, feature, overview, heat):
    from ale_cli.plot import feature_figure, interaction_figure, overview_figure

    summary = make_summary(params=params)
    store = {"path": "store.npz"} | ({} if output is None else {"output": output})
    summary = Summary(**{**summary.__dict__, "store": store})
    assert by_gid(feature_figure(summary, "lin"), "effect_axes").get_ylabel() == feature
    assert by_gid(overview_figure(summary), "f0.axes").get_ylabel() == overview
    heat_fig = interaction_figure(interaction_summary(output), 0)
    assert by_gid(heat_fig, "colorbar").get_ylabel() == heat


def test_cli_ylabel_reaches_the_svg_text(tmp_path, files):
    summary_path, store_path = files
    out = tmp_path / "y"
    invoke_plot(
        summary_path, store_path, out, "--format", "svg", "--features", "lin", "--ylabel", "Risk"
    )
    assert "Risk" in svg_texts(out / "lin.svg")
    assert "Risk" in svg_texts(out / "overview.svg")
    assert "centered effect on disease progression" not in svg_texts(out / "lin.svg")


def test_interaction_figure_by_names_or_index_and_bad_pairs():
    from ale_cli.plot import interaction_figure

    summary = interaction_summary()
    by_name = by_gid(interaction_figure(summary, ("lin", "gap")), "surface")
    by_index = by_gid(interaction_figure(summary, 0), "surface")
    np.testing.assert_array_equal(by_name.get_array(), by_index.get_array())
    with pytest.raises(
        InputError, match=r"^pair must be an interaction of the summary \(lin,gap\), got gap,lin$"
    ):
        interaction_figure(summary, ("gap", "lin"))
    with pytest.raises(
        InputError, match=r"^pair must be an index below 1 \(interactions: lin,gap\), got 3$"
    ):
        interaction_figure(summary, 3)


# ---------------------------------------------------------------- CLI


def test_cli_prints_the_paths_it_wrote_and_nothing_else_is_left(tmp_path, files):
    summary_path, store_path = files
    out = tmp_path / "figs"
    result = invoke_plot(summary_path, store_path, out, "--format", "both")
    stems = ["lin", "gap", "const", LONG, "many", "overview"]
    expected = [str(out / f"{s}.{fmt}") for s in stems for fmt in ("png", "svg")]
    assert result.stdout.splitlines() == expected
    assert result.stderr.strip() == (f"wrote 12 files for 5 features, 1 not estimable to '{out}'")
    assert sorted(p.name for p in out.iterdir()) == sorted(
        [".ale-plots.json", *(Path(p).name for p in expected)]
    )


def test_cli_features_and_config(tmp_path, files):
    summary_path, store_path = files
    config = tmp_path / "plot.yaml"
    config.write_text("plot:\n  format: svg\n  features: [gap, lin]\n  dpi: 80\n")
    out = tmp_path / "sel"
    result = runner.invoke(app, [*PLOT, str(summary_path), "-o", str(out), "--config", str(config)])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [str(out / f"{s}.svg") for s in ("gap", "lin", "overview")]


def test_unsafe_feature_names_become_safe_unique_file_names(tmp_path):
    names = ("a/b", "a_b", "../x", "overview", "größe °C")
    summary_path = tmp_path / "s.json"
    write_summary(summary_path, make_summary(tuple(linear_feature(n) for n in names)))
    out = tmp_path / "o"
    result = runner.invoke(app, [*PLOT, str(summary_path), "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert [Path(p).name for p in result.stdout.splitlines()] == [
        "a_b.png",
        "a_b-2.png",
        "x.png",
        "overview-4.png",
        "groe_C.png",
        "overview.png",
    ]
    assert all(Path(p).parent == out for p in result.stdout.splitlines())


def test_default_jobs():
    from ale_cli.plot.render import default_jobs

    assert default_jobs(3) == 1
    assert 1 <= default_jobs(11) <= 4


@pytest.mark.parametrize(
    ("stem", "expected"),
    [
        ("BMI (kg/m²)", "BMI_kg_m2"),
        ("..", "feature"),
        ("-rf", "rf"),
        (".hidden", "hidden"),
        ("NUL", "NUL_"),
        ("com1.txt", "com1.txt_"),
        ("x" * 300, "x" * 100),
    ],
)
def test_safe_stem(stem, expected):
    from ale_cli.plot import safe_stem

    assert safe_stem(stem) == expected


def _invoke_error(args: list[str]) -> tuple[int, str]:
    result = runner.invoke(app, args)
    return result.exit_code, result.stderr.strip()


def test_error_store_without_the_summary_features(tmp_path, files):
    summary_path, _ = files
    other = tmp_path / "other.npz"
    write_store(other, make_store(("lin", "gap", "const", "age", "many")))
    code, err = _invoke_error(
        [*PLOT, str(summary_path), "--store", str(other), "-o", str(tmp_path / "figs")]
    )
    assert code == 2
    assert err == (
        f"error: store '{other}' does not match summary '{summary_path}': the store has no "
        f"feature(s) {LONG} (store features: lin, gap, const, age, many)"
    )


def test_error_store_with_other_rows(tmp_path, files):
    summary_path, _ = files
    store = make_store()
    other = tmp_path / "short.npz"
    write_store(
        other,
        Store(
            X=store.X[:10],
            local_effects=store.local_effects[:10],
            prediction=store.prediction[:10],
            feature_names=store.feature_names,
            meta={**store.meta, "n_rows": 10},
        ),
    )
    code, err = _invoke_error(
        [*PLOT, str(summary_path), "--store", str(other), "-o", str(tmp_path / "figs")]
    )
    assert (code, err) == (
        2,
        f"error: store '{other}' does not match summary '{summary_path}': the store has 10 rows, "
        "the summary was made from 1216",
    )


def test_error_store_from_another_run():
    from ale_cli.plot.render import check_store

    summary = make_summary()
    summary = Summary(**{**summary.__dict__, "store": {"path": "s.npz", "sha256": "a" * 64}})
    store = make_store()
    check_store(summary, store, ["lin"], store_sha256="a" * 64)  # the same file: no error
    check_store(summary, store, ["lin"])  # no hash to compare: no error
    with pytest.raises(InputError) as exc:
        check_store(
            summary,
            store,
            ["lin"],
            summary_path="s.json",
            store_path="e.npz",
            store_sha256="b" * 64,
        )
    assert str(exc.value) == (
        "store 'e.npz' does not match summary 's.json': the summary was made from store "
        "'s.npz' (sha256 aaaaaaaaaaaa...), this store's sha256 is bbbbbbbbbbbb..."
    )


@pytest.mark.parametrize("part", ["model", "data"])
def test_error_store_from_other_inputs_than_a_summary_made_from_the_model(part):
    from ale_cli.plot.render import check_store

    inputs = {
        "model": {"path": "m.pt", "sha256": "1" * 64},
        "data": {"path": "d.csv", "sha256": "2" * 64},
    }
    summary = make_summary()
    summary = Summary(**{**summary.__dict__, "store": {"path": None, **inputs}})
    store = make_store()
    same = Store(**{**store.__dict__, "meta": {**store.meta, **inputs}})
    check_store(summary, same, ["lin"], store_sha256="f" * 64)  # no store hash to compare
    other = {**inputs, part: {"path": f"other.{part}", "sha256": "9" * 64}}
    store = Store(**{**store.__dict__, "meta": {**store.meta, **other}})
    with pytest.raises(InputError) as exc:
        check_store(summary, store, ["lin"], summary_path="c.json", store_path="e.npz")
    path = inputs[part]["path"]
    digest = inputs[part]["sha256"][:12]
    assert str(exc.value) == (
        f"store 'e.npz' does not match summary 'c.json': the summary was made from {part} "
        f"'{path}' (sha256 {digest}...), the store from {part} 'other.{part}' "
        "(sha256 999999999999...)"
    )


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (
            ["--features", "lin,nope"],
            f"error: summary has no feature 'nope' (features: lin, gap, const, {LONG}, many)",
        ),
        (["--features", "lin,"], "error: --features expects comma-separated names, got 'lin,'"),
    ],
)
def test_error_bad_features(tmp_path, files, extra, message):
    summary_path, _ = files
    assert _invoke_error([*PLOT, str(summary_path), "-o", str(tmp_path / "x"), *extra]) == (
        2,
        message,
    )
    assert not (tmp_path / "x").exists()


def test_error_missing_or_broken_inputs(tmp_path, files):
    summary_path, _ = files
    missing = tmp_path / "nope.json"
    assert _invoke_error([*PLOT, str(missing), "-o", str(tmp_path / "figs")]) == (
        2,
        f"error: summary '{missing}' does not exist",
    )
    not_store = tmp_path / "bad.npz"
    not_store.write_text("hello")
    assert _invoke_error([*PLOT, str(summary_path), "--store", str(not_store)]) == (
        2,
        f"error: '{not_store}' is not a local-effects store (.npz from 'ale compute')",
    )
    as_file = tmp_path / "file"
    as_file.write_text("")
    assert _invoke_error([*PLOT, str(summary_path), "-o", str(as_file)]) == (
        2,
        f"error: output directory '{as_file}' is a file",
    )


def test_error_bad_format_and_dpi(tmp_path, files):
    summary_path, _ = files
    for args in (["--format", "gif"], ["--dpi", "5"]):
        result = runner.invoke(app, [*PLOT, str(summary_path), "-o", str(tmp_path), *args])
        assert result.exit_code == 2
        assert "Invalid value for" in result.stderr
        assert "Traceback" not in result.output


def test_a_failed_save_leaves_no_partial_file(tmp_path, monkeypatch):
    from matplotlib.figure import Figure

    from ale_cli.plot import render_summary

    out = tmp_path / "o"
    out.mkdir()
    (out / "lin.png").write_bytes(b"old")
    from ale_cli.outputs.figures import write_manifest

    write_manifest(out, [out / "lin.png"])

    def broken(self, fh, **kwargs):
        fh.write(b"partial")
        raise OSError("disk full")

    monkeypatch.setattr(Figure, "savefig", broken)
    with pytest.raises(RunError, match="disk full"):
        render_summary(make_summary((linear_feature(),)), out)
    assert sorted(p.name for p in out.iterdir()) == [".ale-plots.json", "lin.png"]
    assert (out / "lin.png").read_bytes() == b"old"


# ---------------------------------------------------------------- layering


def test_cli_import_does_not_import_matplotlib():
    code = "import sys, ale_cli.cli, ale_cli.plot; print('matplotlib' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    assert out.stdout.strip() == "False"


@pytest.mark.parametrize(
    "module",
    [
        "ale_cli.plot.layout",
        "ale_cli.plot.marks",
        "ale_cli.plot.second_order",
        "ale_cli.plot.render",
    ],
)
def test_doctests(module):
    import importlib

    result = doctest.testmod(importlib.import_module(module))
    assert result.attempted > 0 and result.failed == 0
