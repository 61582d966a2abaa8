"""The one way a store file's bytes are read: every member verified as it is read.

:class:`Archive` checks the zip structure (end records, central records, local headers,
members with no gap) before any member is read, and each member's CRC-32 as it is read.
A bad member is a :class:`DamagedStore` raised when it is read; a bad end record an
InputError. Not covered: fields no reader uses (``made by`` system, file attributes)."""

from __future__ import annotations

import struct
import threading
import zipfile
import zlib
from contextlib import AbstractContextManager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from ale_cli.errors import InputError, first_line

#: bytes read (and CRC-checked) at a time: small enough to stay in the CPU's cache
BLOCK = 1 << 20
_LOCAL = struct.Struct("<4s2B4HL2L2H")
_END = struct.Struct("<4s4H2LH")
_END64 = struct.Struct("<4sQ2H2L4Q")
_LOCATOR = struct.Struct("<4sLQL")
_CENTRAL = struct.Struct("<4s4B4HL2L5H2L")
_ZIP64_EXTRA = 0x0001
_DESCRIPTOR = 0x08
#: numpy parses a .npy header with ``ast.literal_eval``, whose state CPython 3.11 shares
#: between threads (python/cpython#106905): two parses at once may fail with "AST constructor
#: recursion depth mismatch", which would call a sound store damaged. One parse at a time.
_HEADER_PARSE = threading.Lock()


class DamagedStore(InputError):
    """A store whose bytes changed after it was written, its meta intact."""


@dataclass(frozen=True)
class Member:
    name: str
    start: int
    size: int
    crc: int
    stored: bool
    #: what is wrong with its zip headers (None: nothing); such a member is never read
    problem: str | None = None


def _extra_records(extra: bytes) -> dict[int, bytes] | None:
    """The extra field's records by id, None if they do not fill it exactly."""
    out: dict[int, bytes] = {}
    pos = 0
    while pos < len(extra):
        if pos + 4 > len(extra):
            return None
        tag, size = struct.unpack_from("<HH", extra, pos)
        if pos + 4 + size > len(extra) or tag in out:
            return None
        out[tag] = extra[pos + 4 : pos + 4 + size]
        pos += 4 + size
    return out


class Archive(AbstractContextManager):
    """A store file opened for verified reading (``with Archive(path) as a: a.array("X")``);
    ``files``: the member names without ``.npy``."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._fh: BinaryIO = open(self.path, "rb")  # noqa: SIM115
        try:
            self.members = self._structure()
        except BaseException:
            self._fh.close()
            raise
        self.files = list(self.members)

    def __exit__(self, *exc: Any) -> None:
        self._fh.close()

    def damaged(self, name: str, why: str) -> DamagedStore:
        return DamagedStore(f"store '{self.path}': array '{name}' is damaged ({why})")

    def _structure(self) -> dict[str, Member]:
        """The members; one with wrong headers is kept with its ``problem``."""
        fh = self._fh
        try:
            with zipfile.ZipFile(fh) as zf:
                infos = zf.infolist()
                start_dir = zf.start_dir
        except (
            zipfile.BadZipFile,
            zipfile.LargeZipFile,
            OSError,
            EOFError,
            ValueError,
            NotImplementedError,  # an unknown zip version
        ):
            raise InputError(
                f"'{self.path}' is not a local-effects store (.npz from 'ale compute')"
            ) from None
        self.raw_names = [info.filename for info in infos]
        size = fh.seek(0, 2)
        self._end_records(size, start_dir, len(infos))
        self._central_records(start_dir, size - _END.size, infos)
        members: dict[str, Member] = {}
        ordered = sorted(infos, key=lambda i: i.header_offset)
        ends = [i.header_offset for i in ordered[1:]] + [start_dir]
        if ordered and ordered[0].header_offset != 0:
            raise InputError(f"store '{self.path}' is damaged (bytes before its first member)")
        for info, end in zip(ordered, ends, strict=True):
            name = info.filename.removesuffix(".npy")
            member = self._local(info, name)
            if member.problem is None:
                last = member.start + info.compress_size
                if info.flag_bits & _DESCRIPTOR:
                    last += self._descriptor_size(member, info)
                if last != end:
                    member = replace(member, problem="the members do not follow one another")
            members[name] = member
        return {name: members[name] for name in (i.filename.removesuffix(".npy") for i in infos)}

    def _local(self, info: zipfile.ZipInfo, name: str) -> Member:
        start = info.header_offset + _LOCAL.size + len(info.orig_filename)
        stored = info.compress_type == zipfile.ZIP_STORED
        member = Member(name, start, info.compress_size, info.CRC, stored)
        extras = _extra_records(info.extra)
        if (
            info.create_version != info.extract_version
            or info.volume != 0
            or info.internal_attr != 0
            or info.comment
            or extras is None
            or set(extras) - {_ZIP64_EXTRA}
        ):
            return replace(member, problem="its central directory record is damaged")
        fh = self._fh
        fh.seek(info.header_offset)
        head = fh.read(_LOCAL.size)
        if len(head) < _LOCAL.size:
            return replace(member, problem="its local header is cut short")
        (sig, version, system, flags, method, t, d, crc, csize, fsize, n_len, e_len) = (
            _LOCAL.unpack(head)
        )
        raw_name = fh.read(n_len)
        y, mo, day, h, mi, sec = info.date_time
        records = _extra_records(fh.read(e_len))
        encoding = "utf-8" if info.flag_bits & 0x800 else "cp437"
        sizes = (csize, fsize)
        # a zip64 local header marks both sizes; one marker alone is a changed byte
        if records is not None and _ZIP64_EXTRA in records and sizes == (0xFFFFFFFF,) * 2:
            big = records[_ZIP64_EXTRA]
            if len(big) >= 16:
                fsize, csize = struct.unpack_from("<QQ", big)
            sizes = (csize, fsize)
        if not info.flag_bits & _DESCRIPTOR:
            recorded = (crc, *sizes)
        else:
            recorded = (info.CRC, info.compress_size, info.file_size)
        if (
            sig != zipfile.stringFileHeader
            or (version, system, flags, method) != (
                info.extract_version, info.reserved, info.flag_bits, info.compress_type
            )
            or (t, d) != (h << 11 | mi << 5 | sec // 2, (y - 1980) << 9 | mo << 5 | day)
            or recorded != (info.CRC, info.compress_size, info.file_size)
            or raw_name != info.orig_filename.encode(encoding)
            or records is None
            or info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED)
            or (stored and info.compress_size != info.file_size)
        ):  # fmt: skip
            return replace(member, problem="its local header differs from the central directory")
        return replace(member, start=info.header_offset + _LOCAL.size + n_len + e_len)

    def _descriptor_size(self, member: Member, info: zipfile.ZipInfo) -> int:
        self._fh.seek(member.start + info.compress_size)
        raw = self._fh.read(24)
        body = raw[4:] if raw[:4] == b"PK\x07\x08" else raw
        lead = len(raw) - len(body)
        small = struct.unpack_from("<LLL", body) if len(body) >= 12 else ()
        big = struct.unpack_from("<LQQ", body) if len(body) >= 20 else ()
        want = (info.CRC, info.compress_size, info.file_size)
        if tuple(small) == want:
            return lead + 12
        if tuple(big) == want:
            return lead + 20
        raise self.damaged(member.name, "its data descriptor differs from the central directory")

    def _central_records(self, start_dir: int, end: int, infos: list[zipfile.ZipInfo]) -> None:
        """The central records' names are their members', ending where the end record says."""
        self._fh.seek(start_dir)
        raw = self._fh.read(max(end - start_dir, 0))
        pos = 0
        for info in infos:
            head = raw[pos : pos + _CENTRAL.size]
            if len(head) < _CENTRAL.size:
                break
            n_len, e_len, c_len = struct.unpack_from("<3H", head, 28)
            encoding = "utf-8" if info.flag_bits & 0x800 else "cp437"
            if raw[pos + _CENTRAL.size : pos + _CENTRAL.size + n_len] != (
                info.orig_filename.encode(encoding)
            ):
                break
            pos += _CENTRAL.size + n_len + e_len + c_len
        else:
            if pos == len(raw) or raw[pos : pos + 4] == zipfile.stringEndArchive64:
                return
        raise InputError(f"store '{self.path}' is damaged (its central directory)")

    def _end_records(self, size: int, start_dir: int, count: int) -> None:
        where = f"store '{self.path}' is damaged (its end of central directory record)"
        fh = self._fh
        fh.seek(max(size - _END.size, 0))
        end = _END.unpack(fh.read(_END.size)) if size >= _END.size else None
        if end is None or end[0] != zipfile.stringEndArchive:
            raise InputError(where)
        _, disk, disk_dir, n_disk, n_total, dir_size, dir_offset, comment = end
        end_at = size - _END.size
        if comment or disk or disk_dir:
            raise InputError(where)
        fh.seek(max(end_at - _LOCATOR.size, 0))
        locator = _LOCATOR.unpack(fh.read(_LOCATOR.size)) if end_at >= _LOCATOR.size else None
        if locator is not None and locator[0] == zipfile.stringEndArchive64Locator:
            if locator[1] != 0 or locator[3] != 1:
                raise InputError(where)
            fh.seek(locator[2])
            record = _END64.unpack(fh.read(_END64.size))
            (sig, rec_size, _made, _need, d1, d2, n_disk, n_total, dir_size, dir_offset) = record
            if (
                sig != zipfile.stringEndArchive64
                or rec_size != _END64.size - 12
                or d1
                or d2
                or locator[2] + _END64.size != end_at - _LOCATOR.size
            ):
                raise InputError(where)
            end_at = locator[2]
        if (n_disk, n_total) != (count, count) or (dir_offset, dir_offset + dir_size) != (
            start_dir,
            end_at,
        ):
            raise InputError(where)

    def member(self, name: str) -> Member:
        if name not in self.members:
            raise InputError(f"store '{self.path}' lacks the array(s) {name}")
        member = self.members[name]
        if member.problem is not None:
            raise self.damaged(name, member.problem)
        return member

    def _stream(self, member: Member) -> Any:
        """A file object over the member's uncompressed bytes."""
        if member.stored:
            return _Window(self._fh, member.start, member.size)
        zf = zipfile.ZipFile(self._fh)
        return zf.open(f"{member.name}.npy")

    def spec(self, name: str) -> tuple[tuple[int, ...], bool, np.dtype, int]:
        """Shape, Fortran order, dtype and header length of a member (its header only)."""
        member = self.member(name)
        with self._stream(member) as fh, _HEADER_PARSE:
            try:
                version = np.lib.format.read_magic(fh)
                if version == (1, 0):
                    shape, fortran, dtype = np.lib.format.read_array_header_1_0(fh)
                elif version == (2, 0):
                    shape, fortran, dtype = np.lib.format.read_array_header_2_0(fh)
                else:
                    raise ValueError(f"unknown .npy version {version}")
            except Exception as exc:  # noqa: BLE001 numpy's header parser raises many kinds
                why = first_line(exc)[:120]
                raise self.damaged(name, f"its .npy header is unreadable: {why}") from None
            return tuple(shape), bool(fortran), dtype, fh.tell()

    def array(self, name: str) -> np.ndarray:
        """The array of member ``name``, read whole and CRC-checked (DamagedStore else)."""
        shape, fortran, dtype, header = self.spec(name)
        if dtype.hasobject:
            raise InputError(
                f"store '{self.path}': array '{name}' holds Python objects, which ale never reads"
            )
        count = int(np.prod(shape, dtype=np.int64))
        member = self.member(name)
        if member.stored and header + count * dtype.itemsize != member.size:
            raise self.damaged(
                name,
                f"its header promises {count * dtype.itemsize} bytes of data, "
                f"it holds {member.size - header}",
            )
        array = np.empty(count, dtype=dtype)
        self._read(member, memoryview(array).cast("B") if count else memoryview(b""), header)
        return array.reshape(shape, order="F" if fortran else "C")

    def verify(self, name: str) -> None:
        """Check member ``name``'s CRC-32 without keeping its bytes."""
        self._read(self.member(name), None)

    def _read(self, member: Member, view: memoryview | None, header: int = 0) -> None:
        """Read the member (after ``header``) into ``view`` (None: a reused block), CRC-checked."""
        block = memoryview(bytearray(BLOCK if view is None else 0))
        try:
            with self._stream(member) as fh:
                crc, done = zlib.crc32(fh.read(header)), 0
                while view is None or done < len(view):
                    part = block if view is None else view[done : done + BLOCK]
                    got = fh.readinto(part)
                    if not got and view is None:
                        break
                    if not got:
                        raise self.damaged(member.name, "it is shorter than its header says")
                    crc = zlib.crc32(part[:got], crc)
                    done += got
                try:
                    rest = fh.read(1)
                except (zipfile.BadZipFile, OSError, EOFError) as exc:
                    raise self.damaged(member.name, first_line(exc)) from None
        except (zipfile.BadZipFile, OSError, EOFError, zlib.error) as exc:
            raise self.damaged(member.name, first_line(exc)[:120]) from None
        if rest:
            raise self.damaged(member.name, "it is longer than its header says")
        if member.stored and crc != member.crc:
            raise self.damaged(member.name, "its bytes do not match its CRC-32")


class _Window(AbstractContextManager):
    """Bytes ``start .. start + size`` of ``fh`` as a file object (no copy of the file)."""

    def __init__(self, fh: BinaryIO, start: int, size: int) -> None:
        self._fh, self._start, self._size, self._pos = fh, start, size, 0

    def __exit__(self, *exc: Any) -> None:
        return None

    def tell(self) -> int:
        return self._pos

    def read(self, n: int = -1) -> bytes:
        left = self._size - self._pos
        n = left if n is None or n < 0 else min(n, left)
        self._fh.seek(self._start + self._pos)
        data = self._fh.read(n)
        self._pos += len(data)
        return data

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        n = min(len(view), self._size - self._pos)
        if n <= 0:
            return 0
        self._fh.seek(self._start + self._pos)
        got = self._fh.readinto(view[:n]) or 0
        self._pos += got
        return got
