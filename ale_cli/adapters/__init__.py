"""Adapters: data loading, the local-effects store, summaries, file helpers."""
