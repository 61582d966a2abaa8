"""``ale report``: one self-contained HTML page of a run (summaries, store, audit, history):
inline SVG figures, CSS and sorting script, nothing fetched; byte-reproducible without its
timestamp. Jinja2 and matplotlib are imported only when a page is built."""

from __future__ import annotations

from ale_cli.report.build import ReportResult, build_report, write_report

__all__ = ["ReportResult", "build_report", "write_report"]
