"""The numeric core: numpy only, arrays in, frozen dataclasses out, no I/O.

One module per step of the estimators:

- :mod:`~ale_cli.core.binning`: bin edges (uniform, type-1 quantile) and bin membership.
- :mod:`~ale_cli.core.binstats`: per-cell sufficient statistics (counts, sums, sums of
  squares; they merge across data chunks) and the bin statistics derived from them.
- :mod:`~ale_cli.core.accumulate`: accumulation of bin effects into the curve, its
  heterogeneity and standard error, centering and evaluation between edges.
- :mod:`~ale_cli.core.effect`: the first-order estimate of one feature from its cell
  statistics on given edges (the composition of the three steps above).
- :mod:`~ale_cli.core.rhale`: RHALE's automatic bin splitting as a shortest path over a grid.
- :mod:`~ale_cli.core.second_order`: pairwise effects on a grid of cells (classic and DALE).
"""
