"""The numeric core: numpy only, arrays in, frozen dataclasses out; no I/O."""
