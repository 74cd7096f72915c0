"""Keep large freed blocks in the process instead of handing them back to the operating system.

The bootstraps draw their resamples in blocks of about 8 MB, tens of thousands of times in one
aggregate or stats job. glibc serves a block that large by mapping fresh pages and unmaps it when it
is freed, so every block is page-faulted in again (zeroed by the kernel): a third of the bootstrap's
time on 60,000 sessions. Raising glibc's mmap and trim thresholds lets freed blocks be reused. The
numbers do not change; on a C library without `mallopt` nothing happens."""

from __future__ import annotations

import ctypes
import ctypes.util
from functools import cache

_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # glibc's <malloc.h>
_LARGE = 64 << 20  # bytes: above the largest resample block


@cache
def reuse_large_blocks() -> bool:
    """Ask glibc (once per process) to keep freed blocks of up to 64 MB for reuse; whether it agreed."""
    try:
        mallopt = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").mallopt
    except (OSError, AttributeError):  # not glibc
        return False
    return mallopt(_M_MMAP_THRESHOLD, _LARGE) == 1 and mallopt(_M_TRIM_THRESHOLD, 2 * _LARGE) == 1
