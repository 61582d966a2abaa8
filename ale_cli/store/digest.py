"""A store file's sha256, hashed once and then remembered by the file itself.

Every estimator's summary records the sha256 of the store it read. A store of
1e7 rows is 2.6 GB: hashing it again on every ``ale rebin`` / ``ale rhale`` /
``ale plot`` costs 1.5 s of CPU (sha256 runs at about 1.8 GB/s here), a third of
a quantile rebin. So the digest is kept in the file's extended attribute
``user.ale.sha256`` with the file's size and modification time; a later reader
uses it only while both are unchanged, and hashes again otherwise. This is the
stat check build tools and git's index make.

- Any write to the file changes its modification time, so the recorded digest is no
  longer used. A write in the same tick of the file system's clock as the write
  that was hashed could keep it: so the record is used only for a file whose last
  metadata change (setting the attribute, a rename) came at least
  :data:`SETTLED_NS` after its last write, in the file system's own clock; a write
  in the tick of the recorded one would be no older than that change.
- The file is checked to be unchanged between the start and the end of hashing.
- ``ale compute`` hashes the store as it writes it (on its writing thread) and
  records the digest on the temporary file before renaming it into place
  (:func:`record_written`), so even the first reader does not hash it.
- Where extended attributes are not supported (some file systems, other operating
  systems) or the file is not writable, nothing is recorded and every reader hashes.
- Copies made with their attributes and times (``cp -p``, ``rsync -tX``) keep the
  digest, which is right: the bytes are the same. Only a deliberate edit that
  restores both the size and the modification time would go unseen.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from ale_cli.io.files import sha256_file

ATTRIBUTE = "user.ale.sha256"
#: a record is used only for a file whose metadata changed this long after its last write
SETTLED_NS = 50_000_000
#: the same on a file system that keeps whole seconds (FAT keeps two)
SETTLED_COARSE_NS = 3_000_000_000
_HEX = re.compile(r"[0-9a-f]{64}")


def store_file_sha256(path: str | Path) -> str:
    """The sha256 of the file at ``path``: the recorded one while the file is unchanged,
    else hashed (and recorded for the next reader when the file allows it)."""
    try:
        before = os.stat(path)
    except OSError:
        return sha256_file(path)  # names the path and what went wrong
    recorded = _recorded(path, before)
    if recorded is not None:
        return recorded
    digest = sha256_file(path)
    _record(path, before, digest)
    return digest


def record_written(fd: int, digest: str) -> None:
    """Record the ``digest`` of a store ``ale`` has just written (the open temporary file
    ``fd``, hashed as it was written, before it is renamed into place): its first reader
    need not hash it (once the rename, later than the write by the time the file takes to
    reach the disk, has settled it); silently nothing where attributes cannot be set."""
    try:
        os.setxattr(fd, ATTRIBUTE, json.dumps({"sha256": digest, **_key(os.fstat(fd))}).encode())
    except (OSError, AttributeError):
        return


def _key(st: os.stat_result) -> dict[str, int]:
    return {"size": st.st_size, "mtime_ns": st.st_mtime_ns}


def _recorded(path: str | Path, st: os.stat_result) -> str | None:
    """The digest the attribute records for the file as ``st`` describes it, or None."""
    try:
        found: Any = json.loads(os.getxattr(path, ATTRIBUTE))
    except (OSError, AttributeError, ValueError):  # none, unsupported, or not ours
        return None
    if not isinstance(found, dict) or {k: found.get(k) for k in ("size", "mtime_ns")} != _key(st):
        return None
    coarse = st.st_mtime_ns % 1_000_000_000 == 0
    if st.st_ctime_ns - st.st_mtime_ns < (SETTLED_COARSE_NS if coarse else SETTLED_NS):
        return None  # changed too soon after its last write to tell a write in that tick
    digest = found.get("sha256")
    return digest if isinstance(digest, str) and _HEX.fullmatch(digest) else None


def _record(path: str | Path, before: os.stat_result, digest: str) -> None:
    """Record ``digest`` for the file if it did not change while it was hashed; silently
    nothing where that cannot be done."""
    try:
        after = os.stat(path)
        if (after.st_ino, after.st_dev, *_key(after).values()) != (
            before.st_ino,
            before.st_dev,
            *_key(before).values(),
        ):
            return
        os.setxattr(path, ATTRIBUTE, json.dumps({"sha256": digest, **_key(before)}).encode())
    except (OSError, AttributeError):  # read-only, unsupported, or no os.setxattr here
        return
