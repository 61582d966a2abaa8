"""What ale writes, and how its own outputs are recognised: the output guard."""
