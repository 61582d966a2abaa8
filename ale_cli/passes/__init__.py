"""Passes over a source of chunks: the engine protocol, the local engine, spooling."""
