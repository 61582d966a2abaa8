"""The numeric core: numpy only, arrays in, frozen dataclasses out, no I/O; one module per
step of the estimators (bins, cell statistics, accumulation, RHALE's bins, per-level and
second-order effects, out-of-core quantiles, bootstrap bands, effect-size statistics)."""
