"""What every figure shares: its Agg canvas (never pyplot), legend, text and labels."""

from __future__ import annotations

import textwrap
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from ale_cli.summary.model import FeatureSummary, Summary


_ESTIMATOR_LABELS = {
    "dale": "DALE, fixed bins",
    "rhale": "RHALE, automatic bins",
    "ale": "classic ALE (finite differences)",
}
MARGIN = 0.12


def estimator_label(estimator: str) -> str:
    """Human name of an estimator key of the summary.

    >>> estimator_label("rhale")
    'RHALE, automatic bins'
    """
    return _ESTIMATOR_LABELS.get(estimator, estimator)


def output_name(summary: Summary) -> str | None:
    """How figures name the model output recorded in ``summary.store["output"]`` (a
    string, or the adapter's mapping of ``selector``, ``kind``, ``column``, ``class``,
    ``name``); None when nothing is recorded.

    >>> from ale_cli.summary.model import Summary
    >>> def named(output):
    ...     return output_name(Summary("dale", {}, {"output": output}, 0, ()))
    >>> named({"selector": "proba:1", "kind": "proba", "column": 1, "class": "yes",
    ...        "name": "proba:1"})
    'probability of class yes'
    >>> named({"selector": None, "kind": "predict", "column": None, "name": "predict"})
    'prediction'
    >>> named({"selector": None, "name": "probabilities", "column": 1})
    'probabilities:1'
    >>> named({"selector": "2", "shape": [10, 3]}), named({"selector": None}), named(None)
    ('output 2', None, None)
    """
    out = summary.store.get("output")
    if isinstance(out, str):
        return out or None
    if not isinstance(out, dict):
        return None
    kind, column = out.get("kind"), out.get("column")
    if kind == "proba" and out.get("class") not in (None, ""):
        return f"probability of class {out['class']}"
    if kind == "predict" and column is None:
        return "prediction"
    name = out.get("name")
    if name:
        name = str(name)
        return name if column is None or ":" in name else f"{name}:{column}"
    if out.get("selector") not in (None, ""):
        return f"output {out['selector']}"
    return None


def effect_label(
    summary: Summary,
    words: str,
    ylabel: str | None,
    *,
    width: int,
    name_width: int,
    max_lines: int = 2,
) -> str:
    """``ylabel`` (its own line breaks kept) wrapped to ``max_lines`` lines of ``width``
    (cut with " …"), else "<words> on <output>", the output name wrapped to ``name_width``.

    >>> from ale_cli.summary.model import Summary
    >>> s = Summary("dale", {}, {"output": {"kind": "predict", "name": "predict"}}, 0, ())
    >>> effect_label(s, "effect", None, width=20, name_width=20)
    'effect on prediction'
    >>> effect_label(Summary("dale", {}, {}, 0, ()), "effect", None, width=20, name_width=20)
    'effect on the model output'
    >>> print(effect_label(s, "effect", "a long label of many words", width=10, name_width=8))
    a long
    label of …
    """
    if ylabel is not None:
        lines = [
            part
            for line in ylabel.splitlines()
            for part in (textwrap.wrap(line, width, break_on_hyphens=False) or [""])
        ]
        if len(lines) > max_lines:
            lines = lines[:max_lines]
            lines[-1] = lines[-1][: width - 2].rstrip() + " …"
        return "\n".join(lines)
    return f"{words} on {wrap(output_name(summary) or 'the model output', name_width, max_lines)}"


def centered_on_mean(summary: Summary) -> bool:
    """True when the effect is centered so that 0 is the average prediction (the default)."""
    for key in ("center", "centering"):
        value = summary.params.get(key)
        if value is not None:
            return str(value) not in ("start", "none")
    return True


def new_figure(size: tuple[float, float], layout: str | None = None) -> Figure:
    """A Figure of ``size`` inches on its own Agg canvas (not in pyplot's figure list)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=size, layout=layout)
    FigureCanvasAgg(fig)
    return fig


def few_ticks(ax: Axes, nbins: int) -> None:
    """At most ``nbins`` intervals per axis: readable, and fewer tick artists to draw."""
    from matplotlib.ticker import MaxNLocator

    ax.xaxis.set_major_locator(MaxNLocator(nbins))
    ax.yaxis.set_major_locator(MaxNLocator(nbins))


def centred_text(ax: Axes, text: str, **kw: Any) -> None:
    """``text`` in the middle of ``ax`` (a cell saying why it holds no curve)."""
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes, **kw)


def figure_legend(fig: Figure, handles: list[Any], labels: list[str], *, ncols: int) -> None:
    """The legend of every mark, centred in the bottom margin of the figure."""
    fig.legend(
        handles,
        labels,
        loc="lower center",
        bbox_to_anchor=(0.5, MARGIN / fig.get_figheight()),
        ncols=ncols,
        frameon=False,
        borderaxespad=0.0,
    ).set_gid("legend")


def wrap(text: str, width: int, max_lines: int | None = None) -> str:
    """``text`` filled to lines of ``width`` characters (at most ``max_lines``, cut with "…")."""
    cut = {"max_lines": max_lines, "placeholder": "…"}
    return textwrap.fill(text, width, break_on_hyphens=False, **cut) or text


def bootstrap_label(summary: Summary) -> str:
    """Legend text of the bootstrap band, e.g. "bootstrap 95 % band (B = 200)".

    >>> from ale_cli.summary.model import Summary
    >>> bootstrap_label(Summary("dale", {"bootstrap": 200, "ci": 0.95}, {}, 10, ()))
    'bootstrap 95 % band (B = 200)'
    """
    level = float(summary.params.get("ci", 0.95)) * 100
    return f"bootstrap {level:g} % band (B = {summary.params.get('bootstrap')})"


def not_estimable_figure(name: str, reason: str | None) -> Figure:
    """A small figure saying that feature (or pair) ``name`` could not be estimated, and why."""
    fig = new_figure((5.0, 1.8))
    reason = reason or "no reason recorded"
    fig.text(
        0.5,
        0.5,
        f"{wrap(name, 60)}: not estimable\n{wrap(reason, 70)}",
        ha="center",
        va="center",
        fontsize=10,
        wrap=False,
        gid="not_estimable",
    )
    return fig


def method_text(feat: FeatureSummary) -> str | None:
    """The short line a figure shows when the local effects are not derivatives.

    >>> from ale_cli.summary.model import FeatureSummary
    >>> method_text(FeatureSummary(name="x", method="secant", note="secants on a fine grid"))
    'piecewise-constant model: secants on a fine grid'
    """
    if feat.method != "secant":
        return None
    detail = (feat.note or "secants across the bins of a fine grid").split(";")[0]
    return f"piecewise-constant model: {detail}"
