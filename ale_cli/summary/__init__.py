"""The summary: the JSON contract every estimator writes and plots and audits read."""
