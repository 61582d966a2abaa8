"""Keep freed memory in the process rather than handing it back to the OS at once.

numpy allocates a fresh buffer for almost every intermediate array; with
glibc's defaults a buffer of a few hundred KiB or more is returned to the OS
when it is freed (``munmap``, or trimming the top of the heap), so the next
one of the same size is page-faulted in again, one 4 KiB page at a time. On
virtual machines a page fault is expensive: an (N = 100k) float64 temporary
then costs about 0.7 ms to fault in against 0.02 ms to compute.
:func:`keep_freed_memory` raises glibc's mmap and trim thresholds once per
process (``mallopt``), as ``MALLOC_MMAP_THRESHOLD_`` and
``MALLOC_TRIM_THRESHOLD_`` would, so freed buffers are reused. The cost is
that up to :data:`TRIM_BYTES` of freed memory stays with the process until
it exits, which suits a batch command.

A user who sets any ``MALLOC_*_`` variable keeps their own settings.
"""

from __future__ import annotations

import os
import sys

#: Allocations below this come from the heap (reused) rather than their own mmap.
MMAP_BYTES = 32 << 20
#: Freed memory at the top of the heap is kept up to this much.
TRIM_BYTES = 256 << 20

_M_TRIM_THRESHOLD = -1  # from glibc's malloc.h
_M_MMAP_THRESHOLD = -3
_USER_SETTINGS = ("MALLOC_TRIM_THRESHOLD_", "MALLOC_MMAP_THRESHOLD_", "MALLOC_TOP_PAD_")


def keep_freed_memory() -> bool:
    """Set the thresholds; True if done (glibc on Linux, no ``MALLOC_*_`` set by the user)."""
    if not sys.platform.startswith("linux") or any(v in os.environ for v in _USER_SETTINGS):
        return False
    import ctypes

    try:
        mallopt = ctypes.CDLL(None).mallopt  # glibc's; musl and others have none
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    return bool(mallopt(_M_MMAP_THRESHOLD, MMAP_BYTES)) and bool(
        mallopt(_M_TRIM_THRESHOLD, TRIM_BYTES)
    )
