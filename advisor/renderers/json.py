"""JSON output: stable key order, no timestamps, one trailing newline.

The text is exactly ``json.dumps(data, indent=2, ensure_ascii=False, allow_nan=False)`` (a
property test holds it to that), written by a direct recursive encoder: Python 3.11's C encoder
does not indent, and its pure-Python indenting one is a generator per container, which made the
JSON of a 1,000-proposal ``check`` (~5 MB) cost about as much as judging them.
"""

from __future__ import annotations

import math
from json.encoder import encode_basestring
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from advisor.catalog import Catalog

_INDENT = "  "
_float_repr = float.__repr__
_int_repr = int.__repr__


def _key(k: Any) -> str:
    """A dict key as ``json.dumps`` writes it (keys are converted to strings, never sorted)."""
    if isinstance(k, str):
        return k
    if k is True:
        return "true"
    if k is False:
        return "false"
    if k is None:
        return "null"
    if isinstance(k, int):
        return _int_repr(k)
    if isinstance(k, float):
        return _float(k)
    raise TypeError(f"keys must be str, int, float, bool or None, not {type(k).__name__}")


def _float(v: float) -> str:
    if not math.isfinite(v):
        raise ValueError("Out of range float values are not JSON compliant: " + repr(v))
    return _float_repr(v)


def _encode(o: Any, level: int, out: list[str], seen: set[int]) -> None:
    if isinstance(o, str):
        out.append(encode_basestring(o))
    elif o is None:
        out.append("null")
    elif o is True:
        out.append("true")
    elif o is False:
        out.append("false")
    elif isinstance(o, int):
        out.append(_int_repr(o))
    elif isinstance(o, float):
        out.append(_float(o))
    elif isinstance(o, (list, tuple, dict)):
        is_map = isinstance(o, dict)
        if not o:
            out.append("{}" if is_map else "[]")
            return
        if id(o) in seen:
            raise ValueError("Circular reference detected")
        seen.add(id(o))
        inner = "\n" + _INDENT * (level + 1)
        items = ((inner + encode_basestring(_key(k)) + ": ", v) for k, v in o.items()) if isinstance(o, dict) else ((inner, v) for v in o)
        sep = "{" if is_map else "["
        for head, value in items:
            out.append(sep + head)
            sep = ","
            _encode_child(value, level + 1, out, seen)
        out.append("\n" + _INDENT * level + ("}" if is_map else "]"))
        seen.discard(id(o))
    else:
        raise TypeError(f"Object of type {type(o).__name__} is not JSON serializable")


def _encode_child(o: Any, level: int, out: list[str], seen: set[int]) -> None:
    if level > _JOIN_DEPTH or not isinstance(o, (list, tuple, dict)):
        _encode(o, level, out, seen)
        return
    mine: list[str] = []
    _encode(o, level, mine, seen)
    out.append("".join(mine))


# Containers this deep or shallower are joined into one string as soon as they are written: a
# 10,000-proposal report then holds one string per result, not ~150 small pieces of each.
_JOIN_DEPTH = 2


def dumps(data: Any) -> str:
    out: list[str] = []
    _encode(data, 0, out, set())
    return "".join(out) + "\n"


# `advisor estimate --format json`: 1 was one bare estimate object; 2 is {"schema_version",
# "results": [{"profile", ...estimate}], ...} for one file or many (docs/user-guide.md).
ESTIMATE_SCHEMA_VERSION = 2


def estimate_json(results: list[tuple[str, Any]]) -> dict[str, Any]:
    """The estimates of one or many profiles, one shape: ``results`` holds one object per
    profile (its label under ``profile``, then the estimate); the first result's fields are also
    kept at the top level, as version 1 printed them (deprecated: read ``results``)."""
    rows = [{"profile": label, **est.to_json()} for label, est in results]
    return {"schema_version": ESTIMATE_SCHEMA_VERSION, "results": rows, **{k: v for k, v in rows[0].items() if k != "profile"}}


def catalog_json(cat: Catalog) -> dict[str, Any]:
    return {
        "schema_version": 1,
        "as_of": cat.as_of.isoformat(),
        "files": cat.files,
        "onprem": cat.onprem.model_dump(mode="json") if cat.onprem else None,
        "accelerators": [
            {
                **acc.model_dump(mode="json", exclude_none=True),
                "counts": acc.counts(),
            }
            for acc in cat.accelerators.values()
        ],
        "sources": {k: v.model_dump(mode="json", exclude_none=True) for k, v in sorted(cat.sources.items())},
    }


# --------------------------------------------------------------------------- the formats (formats.py)


def recommendations(recs: list[Any], opts: Any) -> str:
    """``recommend`` / ``report --format json``: one object for one profile, a list for several."""
    data = [r.to_json() for r in recs]
    return dumps(data[0] if len(data) == 1 else data)


def estimate(results: list[tuple[str, Any]], opts: Any) -> str:
    return dumps(estimate_json(results))


def check(report: Any, opts: Any) -> str:
    return dumps(report.to_json())


def catalog(cat: Catalog, opts: Any) -> str:
    return dumps(catalog_json(cat))
