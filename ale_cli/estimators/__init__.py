"""The estimators: local effects (compute), DALE/RHALE, classic, second order, levels."""
