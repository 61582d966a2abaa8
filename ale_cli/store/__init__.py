"""The local-effects store: the .npz format, directory stores, the one verified reader."""
