"""Gather what the report shows from summaries, a store, an audit report and a history.

Rendered from ``templates/report.html.j2`` with autoescaping: every string from the
data, model or summaries is escaped; only the figures (SVG drawn here, or ``<img>`` of the
plot step's files) are marked ``| safe``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ale_cli import __version__
from ale_cli.errors import InputError
from ale_cli.io.files import atomic_write
from ale_cli.io.jsonio import read_json_file
from ale_cli.plot.first_order import feature_figure, overview_figure
from ale_cli.plot.outputs import output_store
from ale_cli.plot.regional import region_label, regional_figure
from ale_cli.plot.render import matching_store
from ale_cli.plot.second_order import interaction_figure
from ale_cli.report.digest import finest, paragraph, split_checks, verdict
from ale_cli.report.figures import rendered_figures, svg_text, trend
from ale_cli.report.history import FeatureDrift, HistoryRun, feature_drifts, read_history
from ale_cli.summary.build import utc_now
from ale_cli.summary.compare import summary_statistics
from ale_cli.summary.model import FeatureSummary, Summary, read_summary, summary_json
from ale_cli.summary.regional import REGIONAL, RegionalSummary, read_regional

if TYPE_CHECKING:
    from ale_cli.store.npz import Store

TEMPLATE = "report.html.j2"
#: audit report keys the banner and the table need
_AUDIT_KEYS = ("passed", "exit_code", "counts", "checks")
#: the statistics the features table shows
_STATISTICS = ("rank", "aled", "aler_min", "aler_max", "naled", "heterogeneity_share")
#: the most features with regions drawn in the report (by largest drop)
MAX_FIGURES = 12


@dataclass(frozen=True)
class ReportResult:
    """What :func:`build_report` made: the page and what is in it."""

    html: str
    features: int
    figures: int
    interactions: int
    history_runs: int
    audit_passed: bool | None
    timings: dict[str, float] = field(default_factory=dict)


def _num(value: Any) -> str:
    """A number for people: 4 significant digits (``inf``, ``-inf``); ``-`` for a missing one."""
    return "-" if value is None or math.isnan(float(value)) else f"{float(value):.4g}"


def _sort_key(value: Any) -> str:
    """The ``data-sort`` value of a table cell: the number in full, empty when missing."""
    return "" if _num(value) == "-" else repr(float(value))


def _environment() -> Any:
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(Path(__file__).resolve().parent / "templates")),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters["num"] = _num
    env.filters["sortkey"] = _sort_key
    env.filters["zip"] = lambda a, b: list(zip(a, b, strict=True))
    return env


def _flat(value: Any, depth: int = 2) -> str:
    """``value``; a list (and a list in it) as its items joined by commas."""
    if depth and isinstance(value, list):
        return ",".join(_flat(v, depth - 1) for v in value)
    return f"{value}"


def _params(params: dict[str, Any]) -> str:
    return ", ".join(f"{key}={_flat(value)}" for key, value in params.items() if value is not None)


def _notes(feat: FeatureSummary) -> list[str]:
    notes = [f"not estimable: {feat.reason}"] if feat.status != "ok" else []
    if feat.n_outside:
        notes.append(f"{feat.n_outside} row(s) outside the edges left out")
    if feat.note:
        notes.append(feat.note)
    return notes


def _header(summaries: list[tuple[str, Summary]], store: Store | None) -> dict[str, Any]:
    first = summaries[0][1]
    source = first.store
    model, data = source.get("model") or {}, source.get("data") or {}
    details = (store.meta if store is not None else {}).get("method_details") or {}
    method = [f"{k}: {v}" for k, v in details.items() if k not in ("output", "method")]
    return {
        "title": Path(str(model.get("path") or "model")).name,
        "model": model.get("path") or "-",
        "model_sha256": model.get("sha256") or "",
        "model_format": model.get("format") or "",
        "data": data.get("path") or "-",
        "data_sha256": data.get("sha256") or "",
        "rows": first.n_rows,
        "features": len({f.name for _, s in summaries for f in s.features}),
        "method": source.get("method") or "-",
        "method_details": method,
        "output": _params(source.get("output") or {}) or "-",
        "estimators": [
            {"file": Path(label).name, "estimator": s.estimator, "params": _params(s.params)}
            for label, s in summaries
        ],
        "version": __version__,
    }


def _feature_rows(
    summary: Summary,
    store: Store | None,
    drifts: dict[str, FeatureDrift],
    reused: Mapping[tuple[str, Any], str],
) -> list[dict[str, Any]]:
    """The features table, in rank order, a figure per feature."""
    stats = summary_statistics(summary)
    rows = []
    for i, feat in enumerate(summary.features):
        s = stats.get(feat.key) or {}
        drift = drifts.get(feat.name)
        rows.append(
            {
                "anchor": f"feature-{i + 1}",
                "name": feat.key,
                "bins": feat.n_bins,
                **{k: s.get(k) for k in _STATISTICS},
                "notes": _notes(feat),
                "svg": (reused.get(("feature", feat.name)) if feat.output is None else None)
                or svg_text(  # several outputs: this record's view and rows
                    feature_figure(
                        summary.of_output(feat.output),
                        feat.name,
                        store=output_store(store, feat.output),
                    ),
                    prefix=f"f{i}-0-",
                ),
                "drift": drift,
                "trend": trend(drift.values, drift.runs) if drift and drift.runs else None,
            }
        )
    rows.sort(key=lambda r: (r["rank"] is None, r["rank"] or 0, r["anchor"]))
    return rows


def _interactions(
    summaries: list[tuple[str, Summary]],
    store: Store | None,
    reused: Mapping[str, Mapping[tuple[str, Any], str]],
) -> list[dict[str, Any]]:
    items = []
    for name, summary in summaries:
        for i, item in enumerate(summary.interactions):
            n = len(items) + 1
            notes = [f"not estimable: {item.reason}"] if item.status != "ok" else []
            if item.note:
                notes.append(item.note)
            items.append(
                {
                    "anchor": f"interaction-{n}",
                    "a": item.features[0],
                    "b": item.features[1],
                    "label": f"{item.estimator} ({Path(name).name})",
                    "notes": notes,
                    "svg": reused.get(name, {}).get(("interaction", i))
                    or svg_text(interaction_figure(summary, i, store=store), prefix=f"i{n}-"),
                }
            )
    return items


def _regional(
    labels: Sequence[str],
    regions: Mapping[str, RegionalSummary],
    reused: Mapping[str, Mapping[tuple[str, Any], str]],
) -> list[dict[str, Any]]:
    """Per regional summary: split features, largest drop first, the first ``MAX_FIGURES`` drawn."""
    out = []
    for j, label in enumerate(labels):
        if (found := regions.get(label)) is None:
            continue
        split = sorted(
            (r for r in found.regions if r.status == "split"), key=lambda r: (-r.drop, r.name)
        )
        rows = []
        for i, r in enumerate(split):
            drawn = reused.get(label, {}).get(("regional", r.name))
            if i < MAX_FIGURES and drawn is None:
                drawn = svg_text(regional_figure(found, r.name), prefix=f"reg{j}-{i}-")
            rows.append(
                {
                    "name": r.name,
                    "drop": r.drop,
                    "regions": [region_label(n) for n in r.leaves],
                    "svg": drawn if i < MAX_FIGURES else None,
                }
            )
        unsplit = [r.name for r in found.regions if r.status == "no_split"]
        out.append({"label": label, "features": rows, "unsplit": unsplit})
    return out


def build_report(
    summaries: Sequence[str | Path],
    *,
    store: str | Path | None = None,
    audit: str | Path | None = None,
    history: str | Path | None = None,
    history_exclude: Sequence[str] = (),
    timestamp: bool = True,
    figures: Mapping[str | Path, str | Path] | None = None,
    names: Sequence[str] | None = None,
) -> ReportResult:
    """The report page of ``summaries`` (first-order, interact and regional, any order).

    The finest first-order summary (:func:`~ale_cli.report.digest.finest`) is the main one:
    it ranks the features table, is drawn with the ``store`` and compared with ``history``
    (less ``history_exclude`` and a newest run holding the same numbers); the others add
    overviews and heat maps, a regional summary its section (its global curves only when
    alone). ``names``: the summaries' names on the page (default: their paths); ``figures``
    maps a name to the figure directory its plot step wrote
    (:func:`~ale_cli.report.figures.rendered_figures`).
    """
    t0 = time.perf_counter()
    if not summaries:
        raise InputError("{param}: give at least one summary", param="summaries")
    names = [str(p) for p in summaries] if names is None else names
    where = dict(zip(names, summaries, strict=True))
    loaded = [(n, read_summary(where[n])) for n in names]
    _of_one_run(loaded)
    checks = [(label, s, [f.name for f in s.features]) for label, s in loaded]
    store_obj = matching_store(store, checks)
    audit_data = _audit_section(audit, [label for label, _ in loaded])
    runs = read_history(history, exclude=history_exclude) if history is not None else []
    first_order = [(n, s) for n, s in loaded if s.features]
    # a regional summary's global curves are first-order ones: shown only when alone
    first_order = [(n, s) for n, s in first_order if s.estimator != REGIONAL] or first_order
    if first_order:  # the main summary first
        first_order.insert(0, first_order.pop(finest(first_order)))
        runs = _without_this_run(runs, *first_order[0]) if runs else runs
    given = {str(k): v for k, v in (figures or {}).items()}
    regions = {n: read_regional(where[n]) for n, s in loaded if s.estimator == REGIONAL}
    reused = {n: rendered_figures(s, given[n], regions.get(n)) for n, s in loaded if n in given}
    timings = {"read_s": time.perf_counter() - t0}
    t = time.perf_counter()
    shown = _first_order_section(first_order, store_obj, runs, reused)
    shown["interactions"] = _interactions(loaded, store_obj, reused)
    shown["regional"] = _regional([n for n, _ in loaded], regions, reused)
    timings["figures_s"] = time.perf_counter() - t
    t = time.perf_counter()
    context = _context(loaded, store_obj, audit_data, runs, shown, timestamp=timestamp)
    html = _environment().get_template(TEMPLATE).render(**context)
    timings["template_s"] = time.perf_counter() - t
    drawn = [*shown["features"], *shown["others"], *shown["interactions"]]
    return ReportResult(
        html=html,
        features=len(shown["features"]),
        figures=len(drawn)
        + (shown["overview"] is not None)
        + sum(1 for r in shown["regional"] for f in r["features"] if f["svg"] is not None),
        interactions=len(shown["interactions"]),
        history_runs=len(runs),
        audit_passed=None if audit_data is None else bool(audit_data["passed"]),
        timings=timings,
    )


def _context(
    loaded: list[tuple[str, Summary]],
    store_obj: Any,
    audit_data: dict[str, Any] | None,
    runs: list[HistoryRun],
    shown: dict[str, Any],
    *,
    timestamp: bool,
) -> dict[str, Any]:
    """What the template shows (see ``templates/report.html.j2``), ``shown`` the sections."""
    rows, moved, main_label = shown["features"], shown["moved"], shown["main_label"]
    anchors = {r["name"]: r["anchor"] for r in rows}
    header = _header(loaded, store_obj)
    return {
        "header": header,
        "verdict": verdict(audit_data),
        "paragraph": paragraph(
            rows=rows,
            main_label=main_label,
            n_rows=header["rows"],
            moved=moved,
            audit=audit_data,
            history_runs=len(runs),
        ),
        "checks": split_checks(audit_data),
        "generated": utc_now() if timestamp else None,
        "audit": audit_data,
        **{k: v for k, v in shown.items() if k != "moved"},
        "history": {
            "runs": [r.label for r in runs],
            "moved": [{"drift": d, "anchor": anchors.get(d.name)} for d in moved],
        }
        if runs
        else None,
    }


def _of_one_run(loaded: list[tuple[str, Summary]]) -> None:
    """Refuse summaries of another model or data than the first's: the page names one."""
    first, summary = loaded[0]
    for key in ("model", "data"):
        want = (summary.store.get(key) or {}).get("sha256")
        for label, other in loaded[1:]:
            got = (other.store.get(key) or {}).get("sha256")
            if want and got and got != want:
                raise InputError(
                    f"summaries '{first}' and '{label}' are of different {key} files (sha256 "
                    f"{want[:12]}... and {got[:12]}...): a report is of one model and its "
                    "data; 'ale diff' compares two"
                )


def _audit_section(audit: str | Path | None, labels: Sequence[str]) -> dict[str, Any] | None:
    """The audit report (``ale audit --json-report``) of some of the summaries ``labels``,
    each check knowing its summary's file."""
    if audit is None:
        return None
    data = read_json_file(audit, "audit report")
    if not isinstance(data, dict) or any(k not in data for k in _AUDIT_KEYS):
        raise InputError(
            f"'{audit}' is not an ale audit report (written by 'ale audit --json-report'): "
            f"it needs {', '.join(_AUDIT_KEYS)}"
        )
    checked = {Path(str(s)).name for s in data.get("summaries") or ()}
    if checked and not checked & {Path(label).name for label in labels}:
        raise InputError(
            f"audit report '{audit}' checked {', '.join(sorted(checked))}, none of the "
            "summaries given: give the audit report of these summaries"
        )
    for check in data["checks"]:
        check["summary_file"] = Path(str(check.get("summary") or "")).name
    data["several"] = len({c["summary_file"] for c in data["checks"]}) > 1
    return data


def _first_order_section(
    first_order: list[tuple[str, Summary]],
    store_obj: Any,
    runs: list[HistoryRun],
    reused: Mapping[str, Mapping[tuple[str, Any], str]],
) -> dict[str, Any]:
    """The main summary's rows and figures, the others' overviews, what moved most."""
    if not first_order:
        return {"features": [], "overview": None, "main_label": None, "others": [], "moved": []}
    main_name, main = first_order[0]
    drifts = {d.name: d for d in feature_drifts(Path(main_name).name, main, runs)}
    rows = _feature_rows(main, store_obj, drifts, reused.get(main_name, {}))
    overviews = [
        {
            "label": f"{s.estimator} ({Path(name).name})",
            "svg": reused.get(name, {}).get(("overview", None))
            or svg_text(overview_figure(s), prefix=f"overview{j or ''}-"),
        }
        for j, (name, s) in enumerate(first_order)
    ]
    moved = sorted(
        (d for d in drifts.values() if d.previous is not None),
        key=lambda d: (-float(d.previous or 0.0), d.name),
    )
    return {
        "features": rows,
        "overview": overviews[0]["svg"],
        "main_label": overviews[0]["label"],
        "others": overviews[1:],
        "moved": moved,
    }


def _without_this_run(runs: list[HistoryRun], name: str, summary: Summary) -> list[HistoryRun]:
    """The runs less the newest when it holds this very summary (same numbers)."""
    newest = runs[-1].match(Path(name).name, summary)
    if newest is not None and summary_json(newest, timestamp=False) == summary_json(
        summary, timestamp=False
    ):
        return runs[:-1]
    return runs


def write_report(path: str | Path, html: str) -> int:
    """Write the page atomically; its size in bytes."""
    data = html.encode("utf-8")
    with atomic_write(path) as fh:
        fh.write(data)
    return len(data)
