"""Files, JSON, safe YAML and threads: the I/O every layer above shares."""
