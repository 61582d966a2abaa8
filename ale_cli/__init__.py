"""ale: Accumulated Local Effects for trained models, from the command line."""

__version__ = "0.1.0"
