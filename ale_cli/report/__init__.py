"""``ale report``: one self-contained HTML page of a run (summaries, store, audit, history).

The page needs nothing but itself: figures are inline SVG (their text is
text a browser can search), the CSS and the small script that sorts the
tables are inline, and nothing is fetched (no CDN, no web font, no external
``href``/``src``). It prints (print CSS) and is byte-reproducible without its
timestamp. Layer: above plot and the adapters, below the CLI; Jinja2 and
matplotlib are imported only when a page is built.

- :func:`~ale_cli.report.build.build_report`: the page (:class:`ReportResult`).
- :func:`~ale_cli.report.build.write_report`: write it atomically.
- :mod:`ale_cli.report.history`: earlier runs and the drift of each feature.
- :mod:`ale_cli.report.figures`: figures as inline SVG, the drift trend line.
"""

from __future__ import annotations

from ale_cli.report.build import ReportResult, build_report, read_audit, write_report

__all__ = ["ReportResult", "build_report", "read_audit", "write_report"]
