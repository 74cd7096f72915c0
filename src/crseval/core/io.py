"""Files as every stage writes and reads them: atomically (an output either exists complete or not at
all), JSON lines that stay one line a record whatever their strings hold, parquet, digests, logs."""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import re
import stat
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterable, Iterator

import pyarrow as pa
import pyarrow.parquet as pq


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


_FILE_MODE = 0o666 & ~_umask()


@contextmanager
def atomic_path(path: str | Path):
    """Yield a temporary path beside `path`; rename it onto `path` only if the block succeeds.
    The file gets the permissions an ordinary new file would (mkstemp makes it private)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    os.close(handle)
    try:
        yield Path(temporary)
        os.chmod(temporary, _FILE_MODE)
        os.replace(temporary, path)
    finally:
        if os.path.exists(temporary):
            os.unlink(temporary)


def write_json(data: object, path: str | Path) -> None:
    with atomic_path(path) as temporary:
        temporary.write_text(json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8")


# The characters besides "\n" that some reader ends a line at (str.splitlines(): \r, \v, \f, \x1c-\x1e, U+0085,
# U+2028, U+2029; JavaScript: U+2028, U+2029). json.dumps escapes those below U+0020, but with
# ensure_ascii=False leaves U+0085, U+2028 and U+2029 raw, inside strings, where a \u escape stands for them.
_LINE_BREAKS = re.compile("[\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")


def json_line(value: object) -> str:
    """`value` as one line of JSON lines, ended by a newline: Unicode kept as is, except that the other
    characters some reader ends a line at are written as escapes (U+2028 as \\u2028), so that a reply
    holding one stays one line for any reader (the project's own, another program's, an editor's)."""
    return _LINE_BREAKS.sub(lambda m: f"\\u{ord(m[0]):04x}", json.dumps(value, ensure_ascii=False)) + "\n"


def write_json_lines(values: Iterable[object], path: str | Path) -> None:
    """Write `values` as JSON lines (json_line), all or nothing."""
    with atomic_path(path) as temporary:
        temporary.write_text("".join(json_line(v) for v in values), encoding="utf-8")


class UnreadableFile(ValueError):
    """Why a file from outside is not read (read_regular_file): `reason` "not a regular file" or "too large",
    with `size` the bytes it holds (None when it grew past the bound while it was read)."""

    def __init__(self, reason: str, size: int | None = None):
        super().__init__(reason)
        self.reason, self.size = reason, size


def read_regular_file(path: str | Path, max_bytes: int) -> bytes:
    """The bytes of `path`, a regular file of at most `max_bytes`: a pipe or a device would be read forever, and
    a file growing while it is read stops at the bound. UnreadableFile saying which; OSError as open raises."""
    status = os.stat(path)
    if not stat.S_ISREG(status.st_mode):
        raise UnreadableFile("not a regular file")
    if status.st_size > max_bytes:
        raise UnreadableFile("too large", status.st_size)
    with open(path, "rb") as stream:
        data = stream.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise UnreadableFile("too large")
    return data


def json_type(value: object) -> str:
    """The JSON name of a parsed value's type, for messages about the wrong one."""
    names = {dict: "an object", list: "a list", str: "a string", bool: "a boolean", type(None): "null"}
    return names.get(type(value), "a number")


def shown(value: object, limit: int = 60) -> str:
    """A value from outside, as a message shows it: its repr, cut after `limit` characters."""
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


class StrictJSONError(ValueError):
    """JSON text that is not strict JSON (strict_json_loads); the message says what is wrong."""


def strict_json_loads(text: str, max_int_digits: int | None = None) -> object:
    """`text` decoded as strict JSON, the rules every outside input (a model's tool call, a corpus, a voice
    file) is read by: no NaN or Infinity and no number past a double's range (JSON has none; decoders refuse
    them or make inf), no key given twice in one object (which value was meant is not known), no integer of
    more than `max_int_digits` digits when given, no nesting deeper than the decoder can follow. The first
    of these raises StrictJSONError; text that is no JSON at all raises json.JSONDecodeError as json.loads."""
    try:
        return json.loads(
            text,
            object_pairs_hook=_each_key_once,
            parse_constant=_no_json_constant,
            parse_float=_finite_float,
            parse_int=(lambda digits: _bounded_int(digits, max_int_digits)) if max_int_digits else int,
        )
    except RecursionError:
        raise StrictJSONError("nested too deeply") from None
    except json.JSONDecodeError:
        raise
    except StrictJSONError:
        raise
    except ValueError as error:  # an integer past Python's own digit limit
        raise StrictJSONError(str(error)[:120]) from None


def _each_key_once(pairs: list[tuple[str, object]]) -> dict:
    data = dict(pairs)
    if len(data) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                shown = key if len(key) <= 60 else key[:60] + "…"
                raise StrictJSONError(f"the key {shown!r} is given twice in one object")
            seen.add(key)
    return data


def _no_json_constant(name: str):
    raise StrictJSONError(f"{name} is no JSON value")


def _finite_float(digits: str) -> float:
    value = float(digits)
    if not math.isfinite(value):
        raise StrictJSONError(f"the number {digits[:40]} is out of a double's range")
    return value


def _bounded_int(digits: str, most: int) -> int:
    count = len(digits.lstrip("-"))
    if count > most:
        raise StrictJSONError(f"a number of {count:,} digits; at most {most}")
    return int(digits)


class JsonLinesError(ValueError):
    """A line of a JSON-lines file that cannot be read; `line` is its number (from 1)."""

    def __init__(self, message: str, line: int):
        super().__init__(message)
        self.line = line


def numbered_lines(text: str) -> Iterator[tuple[int, str]]:
    """(line number, line) of every line of JSON-lines text that is not blank. Lines end at a newline only:
    a string may hold U+2028 and the other characters str.splitlines() would break it at (files written
    before json_line escaped them, corpora written by other programs)."""
    for number, line in enumerate(text.split("\n"), start=1):
        if line.strip():
            yield number, line


def json_lines(data: bytes, where: str | Path) -> Iterator[tuple[int, object]]:
    """(line number, value) of every line of the JSON-lines `data`; JsonLinesError naming `where` and the
    line that is not UTF-8 or not JSON."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        raise JsonLinesError(f"{where}, line {line}: not UTF-8 text ({error.reason})", line) from None
    for number, line in numbered_lines(text):
        place = f"{where}, line {number}"
        try:
            value = json.loads(line)
        except json.JSONDecodeError as error:
            raise JsonLinesError(f"{place}: not JSON: {error.msg} at character {error.pos + 1}", number) from None
        except (ValueError, RecursionError) as error:  # a number too long to convert, nesting too deep
            raise JsonLinesError(f"{place}: not JSON: {error}", number) from None
        yield number, value


def read_json_lines(path: str | Path) -> list:
    """The values of a JSON-lines file, in order (json_lines)."""
    return [value for _, value in json_lines(Path(path).read_bytes(), path)]


def write_parquet(table: pa.Table, path: str | Path) -> None:
    with atomic_path(path) as temporary:
        pq.write_table(table, temporary)


def log_to(path: str | Path) -> logging.Logger:
    """Send the `crseval` loggers of a rule script to the rule's log file."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    logging.basicConfig(
        filename=str(path),
        filemode="w",
        level=logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        force=True,
    )
    return logging.getLogger("crseval")


def sha256_file(path: str | Path) -> str:
    """Hex sha256 of a file, read in blocks so that model files never sit in memory whole."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 22), b""):
            digest.update(block)
    return digest.hexdigest()
