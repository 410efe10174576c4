"""Bounded JSON loading for untrusted files: a size limit, a nesting limit checked before
parsing (no recursion blow-up), finite numbers only, and positions in every error."""

from __future__ import annotations

import json
import re
from itertools import accumulate
from typing import Any

from advisor.errors import InputError
from advisor.yamlsrc import read_text

MAX_JSON_BYTES = 32 * 1024 * 1024
MAX_JSON_DEPTH = 128
# a string, or an unterminated one to the end (which json.loads then refuses): the scan never restarts from each of its
# escaped quotes (a quote and 40,000 escaped ones took 49 s, review 29)
_STRING = re.compile(r'"(?:[^"\\]|\\.)*(?:"|\\?\Z)', re.S)
_BRACKETS = re.compile(r"[\[\]{}]")


def _line_col(text: str, index: int) -> tuple[int, int]:
    line = text.count("\n", 0, index) + 1
    return line, index - (text.rfind("\n", 0, index) + 1) + 1


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def check_depth(text: str, path: str, max_depth: int = MAX_JSON_DEPTH) -> None:
    bare = _STRING.sub('""', text)
    brackets = _BRACKETS.findall(bare)
    if not brackets:
        return
    depths = list(accumulate(1 if b in "[{" else -1 for b in brackets))
    deepest = max(depths)
    if deepest > max_depth:
        # where: the first bracket past the limit, in the original text
        count = depths.index(deepest) if deepest <= max_depth + 1 else next(i for i, d in enumerate(depths) if d > max_depth)
        seen = -1
        for m in _BRACKETS.finditer(bare):
            seen += 1
            if seen == count:
                idx = m.start()
                break
        else:  # pragma: no cover
            idx = 0
        # positions in ``bare`` differ from ``text`` only inside strings; report the line of the text
        line, col = _line_col(bare, idx)
        raise InputError.single(path, line, col, f"JSON nested deeper than {max_depth} levels")


class _Duplicate(ValueError):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise _Duplicate(k)
        out[k] = v
    return out


def _duplicate_at(text: str, key: str) -> tuple[int, int]:
    """Where the key appears a second time (the first repeat of its spelling in the text)."""
    needle = json.dumps(key)
    first = text.find(needle)
    second = text.find(needle, first + 1) if first >= 0 else -1
    return _line_col(text, second) if second >= 0 else (1, 1)


_ESCAPE = re.compile(r"(\\+)u([dD][89a-fA-F][0-9a-fA-F]{2})")


def check_surrogates(text: str, path: str) -> None:
    """A ``\\uD800``-``\\uDFFF`` escape that is not half of a pair decodes to no character:
    refused at its position (it would fail later, when the output is written)."""
    if "\\u" not in text:
        return
    pending: int | None = None  # end of an unpaired high surrogate escape
    for m in _ESCAPE.finditer(text):
        if len(m.group(1)) % 2 == 0:
            continue  # an escaped backslash followed by 'u'
        value = int(m.group(2), 16)
        if pending is not None:
            if m.start() == pending and 0xDC00 <= value <= 0xDFFF:
                pending = None
                continue
            raise InputError.single(path, *_line_col(text, pending - 6), "a lone UTF-16 surrogate escape is not a character")
        if value >= 0xDC00:
            raise InputError.single(
                path, *_line_col(text, m.start() + len(m.group(1)) - 1), "a lone UTF-16 surrogate escape is not a character"
            )
        pending = m.end()
    if pending is not None:
        raise InputError.single(path, *_line_col(text, pending - 6), "a lone UTF-16 surrogate escape is not a character")


def loads(text: str, path: str, *, max_depth: int = MAX_JSON_DEPTH) -> Any:
    check_depth(text, path, max_depth)
    check_surrogates(text, path)
    try:
        return json.loads(text, parse_constant=_reject_constant, object_pairs_hook=_no_duplicates)
    except _Duplicate as exc:
        line, col = _duplicate_at(text, exc.key)
        raise InputError.single(path, line, col, f"duplicate key {exc.key[:80]!r} in a JSON object") from None
    except json.JSONDecodeError as exc:
        raise InputError.single(path, exc.lineno, exc.colno, f"invalid JSON: {exc.msg}") from None
    except ValueError as exc:  # NaN/Infinity, integers past the digit limit
        raise InputError.single(path, 1, 1, f"invalid JSON: {str(exc).splitlines()[0][:200]}") from None
    except RecursionError:  # pragma: no cover - the depth check comes first
        raise InputError.single(path, 1, 1, "JSON nested too deeply") from None


def loads_stream(text: str, path: str, *, max_depth: int = MAX_JSON_DEPTH, max_values: int = 10_000) -> list[tuple[Any, int, int]]:
    """A stream of JSON values one after another (JSON Lines, or objects back to back as ``kubectl apply -f`` reads a
    .json file): each value with the line and column it starts at, under the same bounds as ``loads``. Raises
    InputError where the text is no such stream (the error of its first value that fails)."""
    check_depth(text, path, max_depth)
    check_surrogates(text, path)
    decoder = json.JSONDecoder(parse_constant=_reject_constant, object_pairs_hook=_no_duplicates)
    out: list[tuple[Any, int, int]] = []
    ws = re.compile(r"[ \t\r\n]*")
    i = ws.match(text, 0).end()  # type: ignore[union-attr]
    while i < len(text):
        if len(out) >= max_values:
            raise InputError.single(path, *_line_col(text, i), f"more than {max_values} JSON values in one file")
        try:
            value, end = decoder.raw_decode(text, i)
        except _Duplicate as exc:
            line, col = _duplicate_at(text, exc.key)
            raise InputError.single(path, line, col, f"duplicate key {exc.key[:80]!r} in a JSON object") from None
        except json.JSONDecodeError as exc:
            raise InputError.single(path, exc.lineno, exc.colno, f"invalid JSON: {exc.msg}") from None
        except ValueError as exc:
            raise InputError.single(path, *_line_col(text, i), f"invalid JSON: {str(exc).splitlines()[0][:200]}") from None
        out.append((value, *_line_col(text, i)))
        i = ws.match(text, end).end()  # type: ignore[union-attr]
    return out


def load_json_file(path: str, *, max_bytes: int = MAX_JSON_BYTES) -> tuple[Any, str]:
    text = read_text(path, max_bytes=max_bytes)
    return loads(text, path), text
