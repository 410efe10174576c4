"""Turn pydantic validation errors into ``path:line:col`` problems with hints."""

from __future__ import annotations

import difflib
import os
import types
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar, cast

from pydantic import BaseModel, ValidationError
from pydantic.fields import FieldInfo

from advisor.errors import InputError, Problem
from advisor.yamlsrc import Document, KeyPath, load_file

M = TypeVar("M", bound=BaseModel)
T = TypeVar("T")


def did_you_mean(word: str, choices: typing.Iterable[str]) -> str:
    """``; did you mean 'x'?`` or an empty string."""
    close = difflib.get_close_matches(str(word), sorted(set(choices)), n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""


def field_path(loc: KeyPath) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out or "(document)"


def _unwrap(annotation: Any) -> list[Any]:
    """The concrete types inside Optional/Union/list/Annotated."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _unwrap(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType):
        out: list[Any] = []
        for arg in typing.get_args(annotation):
            out.extend(_unwrap(arg))
        return out
    if origin in (list, tuple, set, frozenset, dict):
        args = typing.get_args(annotation)
        return _unwrap(args[-1]) if args else []
    return [annotation]


def _model_at(cls: type[BaseModel], loc: KeyPath) -> type[BaseModel] | None:
    current: type[BaseModel] | None = cls
    for part in loc:
        if current is None:
            return None
        if isinstance(part, int):
            continue
        info = current.model_fields.get(part)
        if info is None:
            return None
        current = next(
            (t for t in _unwrap(info.annotation) if isinstance(t, type) and issubclass(t, BaseModel)),
            None,
        )
    return current


def _field_at(cls: type[BaseModel], loc: KeyPath) -> FieldInfo | None:
    names = [p for p in loc if isinstance(p, str)]
    if not names:
        return None
    parent = _model_at(cls, loc[: max(i for i, p in enumerate(loc) if isinstance(p, str))])
    return parent.model_fields.get(names[-1]) if parent else None


def accepted_range(info: FieldInfo | None) -> str:
    if info is None:
        return ""
    lo = hi = None
    lo_open = hi_open = False
    for meta in info.metadata:
        for attr, is_lo, is_open in (("gt", True, True), ("ge", True, False), ("lt", False, True), ("le", False, False)):
            value = getattr(meta, attr, None)
            if value is None:
                continue
            if is_lo:
                lo, lo_open = value, is_open
            else:
                hi, hi_open = value, is_open
    if lo is None and hi is None:
        return ""
    left = ("(" if lo_open else "[") + (f"{lo:g}" if lo is not None else "-inf")
    right = (f"{hi:g}" if hi is not None else "inf") + (")" if hi_open else "]")
    return f" (accepted range: {left}, {right})"


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def problems_from(exc: ValidationError, doc: Document, cls: type[BaseModel], base: KeyPath = ()) -> list[Problem]:
    problems: list[Problem] = []
    seen: set[tuple[KeyPath, str]] = set()
    for err in exc.errors(include_url=False):
        loc: KeyPath = tuple(err["loc"])
        kind = err["type"]
        full = (*base, *loc)
        if kind == "extra_forbidden":
            parent = _model_at(cls, loc[:-1])
            hint = did_you_mean(str(loc[-1]), parent.model_fields) if parent else ""
            problem = doc.problem(full, f"{field_path(loc)}: unknown field{hint}", key=True)
        elif kind == "missing":
            problem = doc.problem(full[:-1], f"{field_path(loc)}: required field is missing")
        elif kind == "literal_error":
            expected = err.get("ctx", {}).get("expected", "")
            choices = [c.strip().strip("'") for c in expected.replace(" or ", ", ").split(",")]
            hint = did_you_mean(str(err["input"]), choices)
            problem = doc.problem(
                full,
                f"{field_path(loc)}: {_short(err['input'])} is not one of {', '.join(choices)}{hint}",
            )
        elif kind in ("model_type", "dict_type") and not loc:
            problem = doc.problem(full, f"expected a mapping of fields, got {type(err['input']).__name__}")
        elif kind == "value_error":
            msg = str(err["msg"]).removeprefix("Value error, ")
            where = f"{field_path(loc)}: " if loc else ""
            problem = doc.problem(full, f"{where}{msg}")
        else:
            rng = accepted_range(_field_at(cls, loc)) if kind in _RANGE_ERRORS else ""
            got = f" (got {_short(err['input'])})" if "input" in err and not isinstance(err["input"], dict) else ""
            problem = doc.problem(full, f"{field_path(loc)}: {err['msg']}{got}{rng}")
        key = (full, problem.message)
        if key not in seen:
            seen.add(key)
            problems.append(problem)
    return problems


_RANGE_ERRORS = {
    "greater_than",
    "greater_than_equal",
    "less_than",
    "less_than_equal",
    "finite_number",
    "float_parsing",
    "float_type",
    "int_parsing",
    "int_type",
    "int_from_float",
}


def validate_document(doc: Document, cls: type[M], *, what: str = "") -> M:
    """Validate one YAML document against ``cls``; raise InputError listing every problem."""
    if doc.data is None:
        raise InputError([doc.problem((), f"empty document: expected {what or 'a mapping'}")])
    if not isinstance(doc.data, dict):
        raise InputError(
            [doc.problem((), f"expected {what or 'a mapping'}, got a {_kind(doc.data)}")]
        )
    try:
        return cls.model_validate(doc.data)
    except ValidationError as exc:
        raise InputError(problems_from(exc, doc, cls)) from None


def builtin_rules_dir() -> Path:
    """``advisor/rules`` inside an installed wheel, or ``rules/`` of a checkout."""
    here = Path(__file__).resolve().parent
    packaged = here / "rules"
    if packaged.is_dir():
        return packaged
    return here.parent / "rules"


# The built-in tables (files of ``rules/``) this process has read, by (file, what it was read as).
# The per-user cache stores them with the knowledge base and primes them (context.Context), so a
# run reads none of them again; a file outside ``rules/`` (a user's) is always read.
_BUILTIN_TABLES: dict[tuple[str, str], Any] = {}


def builtin_table(path: str | Path, kind: str, read: Callable[[], T]) -> T:
    """``read()`` of the built-in file ``path`` (as ``kind``), once per process; a path outside
    ``rules/`` is read every time."""
    root = str(builtin_rules_dir()) + os.sep
    full = os.path.abspath(path)
    if not full.startswith(root):
        return read()
    key = (full[len(root):].replace(os.sep, "/"), kind)
    if key not in _BUILTIN_TABLES:
        _BUILTIN_TABLES[key] = read()
    return cast(T, _BUILTIN_TABLES[key])


def builtin_tables() -> dict[tuple[str, str], Any]:
    """The built-in tables read so far (for the per-user cache)."""
    return dict(_BUILTIN_TABLES)


def prime_builtin_tables(tables: dict[tuple[str, str], Any]) -> None:
    """Tables read by an earlier run of the same code and data (the per-user cache)."""
    for key, value in tables.items():
        _BUILTIN_TABLES.setdefault(key, value)


def load_table(path: str | Path, cls: type[M], *, what: str = "") -> M:
    """A data file of exactly one YAML document (the catalog-like tables in ``rules/``), read with
    the project's safe loader and validated against ``cls``; every problem positioned."""

    def read() -> M:
        docs = [d for d in load_file(str(path)) if d.data is not None]
        if len(docs) != 1:
            raise InputError.single(str(path), 1, 1, "expected exactly one YAML document")
        return validate_document(docs[0], cls, what=what)

    return builtin_table(path, f"{cls.__module__}.{cls.__qualname__}", read)


def _kind(value: Any) -> str:
    if isinstance(value, list):
        return "list"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    return type(value).__name__
