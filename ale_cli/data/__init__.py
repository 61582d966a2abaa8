"""Tabular data: CSV, Parquet and partitioned datasets, whole or chunk by chunk."""
