"""The commands: each a declaration that hands one request to the library."""
