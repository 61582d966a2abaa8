"""``ale report``: one self-contained HTML page of a run (summaries, store, audit, history).

Self-contained: inline SVG figures, CSS and sorting script, nothing fetched; prints;
byte-reproducible without its timestamp. Jinja2 and matplotlib are imported only when a
page is built. :mod:`.history`: earlier runs and drift; :mod:`.figures`: inline SVG.
"""

from __future__ import annotations

from ale_cli.report.build import ReportResult, build_report, read_audit, write_report

__all__ = ["ReportResult", "build_report", "read_audit", "write_report"]
