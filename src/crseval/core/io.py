"""Files as every stage writes and reads them: atomically (an output either exists complete or not at
all), JSON lines that stay one line a record whatever their strings hold, parquet, digests, logs; and the
bounds a table from outside is held to before it is parsed (rows, columns and the bytes it decodes to)."""

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
import pyarrow.compute as pc
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


class TableTooLarge(ValueError):
    """A table from outside past a bound on its rows, its columns or the bytes it decodes to; the message names
    the table and the bound (check_csv_bounds, open_bounded_parquet)."""


def check_csv_bounds(data: bytes, where: str | Path, *, max_rows: int, max_columns: int, max_cells: int) -> None:
    """TableTooLarge unless the CSV text `data` holds at most `max_rows` rows below its header, `max_columns`
    columns and `max_cells` cells (rows times columns: a parser fills every row out to the header's width). A few
    megabytes of commas or line breaks parse into a frame of hundreds of millions of cells, so the bounds are
    read off the bytes before any parser sees them, as upper bounds: every line end below the header counts as a
    row (one inside quotes too; "\r", "\n" or "\r\n", as pandas reads them), every comma of the header record as
    a column."""
    header = _header_end(data)
    ends = data.count(b"\r", header) + data.count(b"\n", header) - data.count(b"\r\n", header)  # "\r\n" is one
    rows = ends - 1 if data.endswith((b"\n", b"\r")) else ends  # the header's own line end is no row
    if rows > max_rows:
        raise TableTooLarge(f"{where} holds up to {rows:,} rows, more than the {max_rows:,} allowed")
    columns = data.count(b",", 0, header) + 1
    if columns > max_columns:
        raise TableTooLarge(f"{where} holds up to {columns:,} columns, more than the {max_columns:,} allowed")
    if rows * columns > max_cells:
        raise TableTooLarge(
            f"{where} holds up to {rows:,} rows of {columns:,} columns, more than the {max_cells:,} cells allowed"
        )


def _header_end(data: bytes) -> int:
    """Where the CSV's first record ends: the first line end outside quotes (a quoted header name may hold one)."""
    quotes, start = 0, 0
    for end in re.finditer(rb"\r\n?|\n", data):
        quotes += data.count(b'"', start, end.start())
        start = end.start()
        if quotes % 2 == 0:
            return end.start()
    return len(data)


# Bytes a value of each fixed-width parquet type decodes to (8 at least: an offset, a pointer or a null flag).
_FIXED_WIDTH = {"BOOLEAN": 8, "INT32": 8, "INT64": 8, "FLOAT": 8, "DOUBLE": 8, "INT96": 12}
# Encodings whose values may repeat what the page holds once: a dictionary index, a prefix of the value before.
_EXPANDING = frozenset({"PLAIN_DICTIONARY", "RLE_DICTIONARY", "DELTA_BYTE_ARRAY"})
_DICTIONARY = frozenset({"PLAIN_DICTIONARY", "RLE_DICTIONARY"})


def open_bounded_parquet(
    source, where: str | Path, *, max_bytes: int, max_rows: int, max_columns: int
) -> pq.ParquetFile:
    """The parquet file `source` (a path, an open file or a buffer), opened for reading once its footer shows
    that it holds at most `max_rows` rows and `max_columns` columns and decodes to at most `max_bytes`;
    TableTooLarge else. Nothing but the footer is decoded to tell (and, see `_decoded_bytes`, the dictionaries
    of columns whose footer cannot): a file of a few kilobytes can repeat one long string of its dictionary
    page in every row and decode to gigabytes, which the footer's encoded sizes do not show."""
    parquet = pq.ParquetFile(source)
    footer = parquet.metadata
    if footer.num_rows > max_rows:
        raise TableTooLarge(f"{where} holds {footer.num_rows:,} rows, more than the {max_rows:,} allowed")
    if footer.num_columns > max_columns:
        raise TableTooLarge(f"{where} holds {footer.num_columns:,} columns, more than the {max_columns:,} allowed")
    size = _decoded_bytes(parquet, source, max_bytes)
    if size > max_bytes:
        raise TableTooLarge(f"{where} decodes to {size:,} bytes, more than the {max_bytes:,} allowed")
    return parquet


def _decoded_bytes(parquet: pq.ParquetFile, source, max_bytes: int) -> int:
    """An upper bound of the bytes the file decodes to. From the footer: a fixed-width column its values' width
    times their number; a column of text or bytes its pages' decoded size (total_uncompressed_size) and an
    offset a value, or where its values may repeat what a page holds once (a dictionary, prefixes) their number
    times that size (no value is longer than the page it is read from). Where the bound of the dictionary-encoded
    text columns takes the whole past `max_bytes` (a column of distinct session ids does at a few thousand rows),
    their dictionaries and indices are read, never the values they expand to, and each value's length summed."""
    footer, schema = parquet.metadata, parquet.schema
    total, loose = 0, {}
    for column in range(footer.num_columns):
        leaf = schema.column(column)
        width = leaf.length if leaf.physical_type == "FIXED_LEN_BYTE_ARRAY" else _FIXED_WIDTH.get(leaf.physical_type)
        for group in range(footer.num_row_groups):
            chunk = footer.row_group(group).column(column)
            values = max(chunk.num_values, footer.row_group(group).num_rows)
            pages = chunk.total_uncompressed_size
            if width is not None:
                total += max(pages, values * max(width, 8))
            elif not _EXPANDING.intersection(chunk.encodings):
                total += pages + values * 8
            elif _DICTIONARY.issuperset(_EXPANDING.intersection(chunk.encodings)):
                loose[(group, column)] = pages + values * (pages + 8)
            else:
                total += pages + values * (pages + 8)
    if total + sum(loose.values()) <= max_bytes or not loose or total > max_bytes:
        return total + sum(loose.values())
    names = [schema.column(column).path for _, column in loose]
    if len(parquet.schema_arrow) != footer.num_columns or len(set(names)) < len({c for _, c in loose}):
        return total + sum(loose.values())  # nested columns, or two of one name: the footer's bound stands
    try:
        dictionaries = pq.ParquetFile(source, read_dictionary=sorted(set(names)))
        for group, column in loose:
            read = dictionaries.read_row_group(group, columns=[schema.column(column).path]).column(0)
            total += _expanded_bytes(read)
            if total > max_bytes:
                break  # past the bound already: the rest need not be counted
    except (pa.ArrowException, KeyError, ValueError):  # no column to read as a dictionary: the footer's bound stands
        return total + sum(loose.values())
    return total


def _expanded_bytes(column: pa.ChunkedArray) -> int:
    """The bytes a column of dictionary arrays decodes to: per value its entry's length, and 8 for its offset."""
    size = 0
    for chunk in column.chunks:
        if isinstance(chunk, pa.DictionaryArray):
            lengths = pc.binary_length(chunk.dictionary).cast(pa.int64())
            size += (pc.sum(pc.take(lengths, chunk.indices)).as_py() or 0) + 8 * len(chunk) + chunk.dictionary.nbytes
        else:
            size += chunk.nbytes
    return size


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
