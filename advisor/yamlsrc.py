"""Safe YAML loading with source positions and hard limits.

The document is built from libyaml's event stream (C parser when available),
iteratively, so that

* every mapping key and value keeps its 1-based line and column,
* duplicate keys, explicit tags (``!!python/...``, custom tags) and merge keys
  are rejected,
* nesting depth, the number of nodes (alias expansion included, which stops
  "billion laughs") and the input size are bounded,
* nothing is ever constructed but ``dict``, ``list``, ``str``, ``int``,
  ``float``, ``bool`` and ``None``.
"""

from __future__ import annotations

import math
import os
import re
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import yaml
from yaml import events as ev
from yaml.constructor import SafeConstructor
from yaml.nodes import ScalarNode
from yaml.resolver import Resolver

from advisor.errors import InputError, Problem

try:  # libyaml's C parser: same events and marks, much faster.
    from yaml._yaml import CParser as _Parser
except ImportError:  # pragma: no cover - depends on the PyYAML build
    from yaml.parser import Parser as _PyParserBase
    from yaml.reader import Reader as _Reader
    from yaml.scanner import Scanner as _Scanner

    class _Parser(_Reader, _Scanner, _PyParserBase):  # type: ignore[no-redef]
        def __init__(self, stream: str) -> None:
            _Reader.__init__(self, stream)
            _Scanner.__init__(self)
            _PyParserBase.__init__(self)

MAX_BYTES = 1024 * 1024
MAX_DEPTH = 64
MAX_NODES = 50_000  # real profiles have < 300 nodes, the catalog ~4,000; bounds memory

KeyPath = tuple[Any, ...]  # str keys and int indexes (any scalar key in odd files)

_ALLOWED_TAGS = {
    None,
    "!",
    "tag:yaml.org,2002:str",
    "tag:yaml.org,2002:int",
    "tag:yaml.org,2002:float",
    "tag:yaml.org,2002:bool",
    "tag:yaml.org,2002:null",
    "tag:yaml.org,2002:map",
    "tag:yaml.org,2002:seq",
}

_resolver = Resolver()
_FLOAT_12 = re.compile(r"^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)[eE][-+]?[0-9]+$")
_constructor = SafeConstructor()


@dataclass
class Document:
    """One YAML document: plain data plus where each part of it came from."""

    path: str
    index: int  # 0-based position in a multi-document file
    data: Any
    start: tuple[int, int]
    value_pos: dict[KeyPath, tuple[int, int]] = field(default_factory=dict)
    key_pos: dict[KeyPath, tuple[int, int]] = field(default_factory=dict)

    def where(self, loc: KeyPath, *, key: bool = False) -> tuple[int, int]:
        """Position of ``loc``; the key's position if ``key``; else the nearest ancestor's."""
        if key and loc in self.key_pos:
            return self.key_pos[loc]
        probe = loc
        while True:
            if probe in self.value_pos:
                return self.value_pos[probe]
            if probe in self.key_pos:
                return self.key_pos[probe]
            if not probe:
                return self.start
            probe = probe[:-1]

    def problem(self, loc: KeyPath, message: str, *, key: bool = False) -> Problem:
        line, col = self.where(loc, key=key)
        return Problem(self.path, line, col, message)

    @property
    def label(self) -> str:
        """``path`` for the first document, ``path#N`` (1-based) for later ones."""
        return self.path if self.index == 0 else f"{self.path}#{self.index + 1}"


_SURROGATE = re.compile("[\ud800-\udfff]")
STDIN = "-"
_STDIN: list[bytes] = []  # what the CLI read from standard input for the path "-", once


OUTSIDE = (
    "a symbolic link to a file outside the repository (or the directory checked): not read; a pull request must not point "
    "the gate at the runner's files"
)


def upward(start: str, marker: str, exists: Any = os.path.exists, levels: int = 4096) -> str | None:
    """The nearest directory at or above ``start`` holding ``marker`` (at most ``levels`` up)."""
    d = os.path.abspath(start)
    for _ in range(levels):
        if exists(os.path.join(d, marker)):
            return d
        up = os.path.dirname(d)
        if up == d:
            return None
        d = up
    return None


def git_root(start: str) -> str | None:
    return upward(start, ".git")


# the directories a run checks (a directory argument, a file argument's directory), longest first: set by the CLI
# before any file is read (advisor/check/files.select), inherited by the forked workers
_CHECKED: list[str] = []


def set_checked(paths: list[str]) -> None:
    """Record what the run checks: a file outside any git work tree may read within the one of these it lies in."""
    dirs = [os.path.abspath(p if os.path.isdir(p) else os.path.dirname(os.path.abspath(p))) for p in paths
            if p != STDIN and os.path.exists(p)]
    # a directory named through a symbolic link is no boundary: what it resolves to was not what was asked to be checked
    roots = {d for d in dirs if os.path.realpath(d) == d}
    _CHECKED[:] = sorted(roots, key=lambda r: (-len(r), r))


def read_boundary(path: str) -> str:
    """What a file may resolve into: its repository's work tree, else the working directory where it lies within it,
    else the directory checked that holds it (review 27: a kustomization in a non-git directory checked from another
    directory had its own resources refused as 'outside the repository', and a local Terraform module was judged at
    its defaults), else the working directory."""
    here = os.path.dirname(os.path.abspath(path))
    root = git_root(here)
    if root is not None:
        return os.path.realpath(root)
    real, cwd = os.path.realpath(here), os.path.realpath(os.getcwd())

    def under(d: str) -> bool:
        return real == d or real.startswith(d.rstrip(os.sep) + os.sep)

    if under(cwd):  # an overlay's ../base beside the directory checked, within the working directory
        return cwd
    return next((c for c in _CHECKED if under(c)), cwd)


# version-control metadata inside a work tree: never an input, never read into an output (actions/checkout keeps the
# job's token in .git/config: a kustomization that reads it as a ConfigMap source would put it in every report)
VCS_DIRS = frozenset({".git", ".hg", ".svn"})


def escapes(path: str, boundary: str) -> bool:
    """Whether ``path`` resolves, through symbolic links, outside ``boundary`` (a resolved path: see
    ``read_boundary``), or into its version-control metadata (VCS_DIRS); a checked-in link to ~/.aws/credentials or
    /proc/self/environ must not be read into a report or an error message, nor a kustomization's base or a release's
    values file out of the repository, nor the token .git/config holds."""
    real = os.path.realpath(path)
    if real == boundary:
        return False
    inside = boundary.rstrip(os.sep) + os.sep
    return not real.startswith(inside) or any(part in VCS_DIRS for part in real[len(inside):].split(os.sep))


def linked_outside(path: str) -> bool:
    """A named input file that is (or passes through) a symbolic link resolving outside its repository's work tree
    (else the working directory): never opened, so no value of the target reaches a message."""
    return path != STDIN and os.path.realpath(path) != os.path.abspath(path) and escapes(path, read_boundary(path))


def provide_stdin(raw: bytes) -> None:
    """Make ``raw`` the content of the path ``-`` (read once by the CLI, shared with workers),
    without a UTF-8 byte-order mark (so a plan JSON piped with one is still seen as JSON)."""
    _STDIN[:] = [raw.removeprefix(b"\xef\xbb\xbf")]


def stdin_is_json() -> bool:
    """Whether what was read from standard input is a JSON object (a Terraform plan, say)."""
    return bool(_STDIN) and _STDIN[0].removeprefix(b"\xef\xbb\xbf").lstrip()[:1] == b"{"


def read_text(path: str, *, max_bytes: int = MAX_BYTES) -> str:
    """Read a UTF-8 text file with a size limit; refuse anything but a regular file.
    The path ``-`` is standard input, as provided by :func:`provide_stdin`."""
    if path == STDIN:
        if not _STDIN:
            raise InputError.single(path, 1, 1, "standard input was not read")
        if len(_STDIN[0]) > max_bytes:
            raise InputError.single(path, 1, 1, f"standard input is larger than the {max_bytes}-byte limit")
        return decode(_STDIN[0], path)
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise InputError.single(path, 1, 1, "no such file") from None
    except PermissionError:
        raise InputError.single(path, 1, 1, "permission denied") from None
    except OSError as exc:
        raise InputError.single(path, 1, 1, f"cannot read: {exc.strerror or exc}") from None
    if stat.S_ISDIR(st.st_mode):
        raise InputError.single(path, 1, 1, "is a directory, expected a YAML file")
    if not stat.S_ISREG(st.st_mode):
        raise InputError.single(path, 1, 1, "not a regular file (device, FIFO or socket)")
    if st.st_size > max_bytes:
        raise InputError.single(
            path, 1, 1, f"file is {st.st_size} bytes, larger than the {max_bytes}-byte limit"
        )
    try:
        with open(path, "rb") as fh:
            raw = fh.read(max_bytes + 1)
    except PermissionError:
        raise InputError.single(path, 1, 1, "permission denied") from None
    except OSError as exc:
        raise InputError.single(path, 1, 1, f"cannot read: {exc.strerror or exc}") from None
    if len(raw) > max_bytes:
        raise InputError.single(path, 1, 1, f"file is larger than the {max_bytes}-byte limit")
    return decode(raw, path)


def decode(raw: bytes, path: str) -> str:
    """Decode UTF-8 (a BOM is allowed), reporting the position of the first bad byte."""
    if raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        before = raw[: exc.start]
        line = before.count(b"\n") + 1
        col = exc.start - (before.rfind(b"\n") + 1) + 1
        raise InputError.single(path, line, col, "not valid UTF-8 text") from None
    if "\x00" in text:
        idx = text.index("\x00")
        line = text.count("\n", 0, idx) + 1
        col = idx - (text.rfind("\n", 0, idx) + 1) + 1
        raise InputError.single(path, line, col, "binary data (NUL byte) in a YAML file")
    return text


def load_documents(
    text: str,
    path: str,
    *,
    max_depth: int = MAX_DEPTH,
    max_nodes: int = MAX_NODES,
    lenient: bool = False,
    go_bools: bool = True,
    last_wins: bool = False,
) -> list[Document]:
    """Parse every document of ``text``. Raises InputError with positions. ``lenient``: another tool's tag
    (_foreign_tag) is tolerated, a local one read as ``{tag: value}`` (_local_tag) and a python name as untagged,
    and a merge key (``<<``) is a plain key (nothing is ever constructed from a tag): to tell what a file is, and
    to read a CloudFormation template in its short form. ``go_bools``: plain ``y``/``n`` are booleans, as the
    tools that apply infrastructure files read them (a file under review: ``enabled: y`` turns autoscaling on for
    kubectl); advisor's own inputs (profiles, policies, rules, the catalog: load_file) keep them as text. ``last_wins``: a
    key written twice keeps its last value, as Helm reads a values file (go-yaml v2 unstrict); otherwise two differing
    values of one key are an input error (which one a tool keeps is ambiguous)."""
    builder = _Builder(path, max_depth, max_nodes, lenient, go_bools, last_wins)
    try:
        return builder.run(text)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line, col = (mark.line + 1, mark.column + 1) if mark else (1, 1)
        msg = exc.problem or exc.context or "invalid YAML"
        raise InputError.single(path, line, col, f"invalid YAML: {msg}") from None
    except yaml.YAMLError as exc:  # reader errors (control characters) and the like
        mark = getattr(exc, "problem_mark", None)
        line, col = (mark.line + 1, mark.column + 1) if mark else (1, 1)
        raise InputError.single(path, line, col, f"invalid YAML: {_one_line(str(exc))}") from None
    except RecursionError:  # pragma: no cover - the builder is iterative; belt and braces
        raise InputError.single(path, 1, 1, "YAML nested too deeply") from None


def load_file(path: str, *, max_bytes: int = MAX_BYTES) -> list[Document]:
    return load_documents(read_text(path, max_bytes=max_bytes), path, go_bools=False)


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _foreign_tag(tag: Any) -> bool:
    """A tag another tool gives meaning to, tolerated by the lenient read: a local one (CloudFormation's !Ref, GitLab's
    !reference; read as {tag: value}) or a python name (mkdocs' !!python/name:material.extensions.emoji.twemoji). A tag
    that builds or calls a python object (python/object, /apply, /new, /module) is never tolerated."""
    if not isinstance(tag, str):
        return False
    if tag.startswith("tag:yaml.org,2002:python/"):
        return tag.startswith("tag:yaml.org,2002:python/name:")
    return True


def _local_tag(tag: Any) -> bool:
    """A local tag (``!Ref``, ``!reference``): read leniently as ``{tag: value}``, so a reader can tell a reference
    from a literal (CloudFormation's short form is its long form {"Ref": X} once the tag is named)."""
    return isinstance(tag, str) and tag.startswith("!") and tag != "!"


class _Frame:
    __slots__ = ("anchor", "container", "dup", "is_map", "key", "key_mark", "loc", "weight", "wrap")

    def __init__(self, container: Any, is_map: bool, loc: KeyPath, anchor: str | None) -> None:
        self.container = container
        self.is_map = is_map
        self.key: Any = _NO_KEY
        self.key_mark: tuple[int, int] | None = None
        self.dup: tuple[Any, str] | None = None  # a repeated key: where it is repeated, the error if its value differs
        self.loc = loc
        self.anchor = anchor
        self.weight = 1
        self.wrap: str | None = None  # a local tag read leniently: the container is its value


_NO_KEY = object()


# Plain scalars that YAML 1.1 (and go-yaml v2, which kubectl, Helm, eksctl and Kustomize read manifests and
# values with through sigs.k8s.io/yaml) reads as booleans and PyYAML's resolver keeps as text
_GO_BOOLS = {"y": True, "Y": True, "n": False, "N": False}


class _Builder:
    def __init__(
        self, path: str, max_depth: int, max_nodes: int, lenient: bool = False, go_bools: bool = False, last_wins: bool = False,
    ) -> None:
        self.path = path
        self.max_depth = max_depth
        self.max_nodes = max_nodes
        self.lenient = lenient
        self.go_bools = go_bools
        self.last_wins = last_wins

    def _fail(self, mark: Any, message: str) -> InputError:
        return InputError.single(self.path, mark.line + 1, mark.column + 1, message)

    def _events(self, text: str) -> Iterator[Any]:
        parser = _Parser(text)
        try:
            while True:
                event = parser.get_event()
                if event is None:
                    return
                yield event
                if isinstance(event, ev.StreamEndEvent):
                    return
        finally:
            dispose = getattr(parser, "dispose", None)
            if dispose is not None:
                dispose()

    def run(self, text: str) -> list[Document]:
        docs: list[Document] = []
        anchors: dict[str, tuple[Any, int]] = {}
        stack: list[_Frame] = []
        doc: Document | None = None
        nodes = 0
        for event in self._events(text):
            if isinstance(event, ev.DocumentStartEvent):
                start: Any = event.start_mark
                doc = Document(self.path, len(docs), None, (start.line + 1, start.column + 1))
                anchors = {}
                continue
            if isinstance(event, ev.DocumentEndEvent):
                assert doc is not None
                docs.append(doc)
                doc = None
                continue
            if isinstance(event, (ev.StreamStartEvent, ev.StreamEndEvent)):
                continue
            assert doc is not None
            mark: Any = event.start_mark
            pos = (mark.line + 1, mark.column + 1)

            if isinstance(event, (ev.MappingEndEvent, ev.SequenceEndEvent)):
                frame = stack.pop()
                if frame.is_map and frame.key is not _NO_KEY:  # pragma: no cover - parser forbids
                    raise self._fail(mark, "mapping key without a value")
                value = frame.container if frame.wrap is None else {frame.wrap: frame.container}
                if frame.anchor is not None:
                    anchors[frame.anchor] = (value, frame.weight)
                self._attach(doc, stack, value, frame.weight, frame.loc, None, mark)
                continue

            if isinstance(event, ev.AliasEvent):
                if event.anchor not in anchors:
                    raise self._fail(mark, f"unknown alias *{event.anchor}")
                value, weight = anchors[event.anchor]
                nodes += weight
                if nodes > self.max_nodes:
                    raise self._fail(
                        mark,
                        f"document expands to more than {self.max_nodes} nodes "
                        "(alias expansion limit)",
                    )
                self._attach(doc, stack, value, weight, None, pos, mark)
                continue

            tag = getattr(event, "tag", None)
            if tag not in _ALLOWED_TAGS and not (self.lenient and _foreign_tag(tag)):
                raise self._fail(mark, f"YAML tag {tag!r} is not allowed (plain data only)")
            nodes += 1
            if nodes > self.max_nodes:
                raise self._fail(mark, f"document has more than {self.max_nodes} nodes")

            if isinstance(event, ev.ScalarEvent):
                if _SURROGATE.search(event.value):
                    raise self._fail(mark, "a lone UTF-16 surrogate escape (\\uD800-\\uDFFF) is not a character")
                try:
                    value = self._scalar(event, as_key=bool(stack) and stack[-1].is_map and stack[-1].key is _NO_KEY)
                except (ValueError, OverflowError):
                    raise self._fail(mark, f"number {event.value[:20]}... is too large") from None
                if self.lenient and _local_tag(tag):
                    value = {tag: value}
                if event.anchor is not None:
                    anchors[event.anchor] = (value, 1)
                self._attach(doc, stack, value, 1, None, pos, mark)
                continue

            is_map = isinstance(event, ev.MappingStartEvent)
            if len(stack) >= self.max_depth:
                raise self._fail(mark, f"nesting deeper than {self.max_depth} levels")
            loc = self._child_loc(stack)
            if stack and stack[-1].is_map and stack[-1].key is _NO_KEY:
                raise self._fail(mark, "a mapping or list cannot be a mapping key")
            doc.value_pos[loc] = pos
            stack.append(_Frame({} if is_map else [], is_map, loc, event.anchor))
            if self.lenient and _local_tag(tag):
                stack[-1].wrap = tag
        return docs

    @staticmethod
    def _child_loc(stack: list[_Frame]) -> KeyPath:
        if not stack:
            return ()
        parent = stack[-1]
        if parent.is_map:
            key = parent.key
            return (*parent.loc, key if key is not _NO_KEY else "?")
        return (*parent.loc, len(parent.container))

    def _attach(
        self,
        doc: Document,
        stack: list[_Frame],
        value: Any,
        weight: int,
        loc: KeyPath | None,
        pos: tuple[int, int] | None,
        mark: Any,
    ) -> None:
        if not stack:
            doc.data = value
            if pos is not None:
                doc.value_pos[()] = pos
            return
        parent = stack[-1]
        parent.weight += weight
        if parent.is_map:
            if parent.key is _NO_KEY:
                if not isinstance(value, (str, int, float, bool)) and value is not None:
                    raise self._fail(mark, "a mapping or list cannot be a mapping key")
                if value == "<<" and isinstance(value, str) and not self.lenient:
                    raise self._fail(mark, "merge keys (<<) are not supported")
                if value in parent.container and self.last_wins:
                    # the tool reads it so (Helm's values, through go-yaml v2 unstrict): the later value replaces the
                    # earlier, as if the key were written once
                    parent.key = value
                    doc.key_pos[(*parent.loc, value)] = (mark.line + 1, mark.column + 1)
                    return
                if value in parent.container:
                    line, col = doc.key_pos.get((*parent.loc, value), (0, 0))
                    where = ".".join(str(p) for p in (*parent.loc, value))
                    # a key written twice with the same value reads the same whichever one a parser keeps
                    # (aibrix's kustomizations repeat their apiVersion); a different value is ambiguous
                    parent.dup = (mark, f"{where}: duplicate key {value!r} (first defined at line {line}, column {col})")
                    parent.key = value
                    return
                parent.key = value
                doc.key_pos[(*parent.loc, value)] = (mark.line + 1, mark.column + 1)
                return
            key = parent.key
            if parent.dup is not None:
                dup_mark, message = parent.dup
                parent.dup = None
                if parent.container[key] != value or type(parent.container[key]) is not type(value):
                    raise self._fail(dup_mark, message)
                parent.key = _NO_KEY
                return
            parent.container[key] = value
            if pos is not None:
                doc.value_pos[(*parent.loc, key)] = pos
            parent.key = _NO_KEY
        else:
            if pos is not None:
                doc.value_pos[(*parent.loc, len(parent.container))] = pos
            parent.container.append(value)

    def _scalar(self, event: Any, as_key: bool = False) -> Any:
        tag = event.tag
        if self.go_bools and not as_key and tag is None and not event.style and event.value in _GO_BOOLS:
            return _GO_BOOLS[event.value]
        if tag in (None, "!"):
            tag = _resolver.resolve(ScalarNode, event.value, event.implicit)  # type: ignore[no-untyped-call]
        node = ScalarNode(tag, event.value, event.start_mark, event.end_mark, event.style)
        if tag == "tag:yaml.org,2002:int":
            number = _constructor.construct_yaml_int(node)
            # YAML 1.1 reads 8:8:8... as one base-60 number: no digit limit stops it, and Python cannot print one of
            # more than 4,300 digits (every message that shows it would fail); no count or size needs 64 bits
            if abs(number) >= 1 << 64:
                raise OverflowError(event.value[:20])
            return number
        if tag == "tag:yaml.org,2002:float":
            value = _constructor.construct_yaml_float(node)
            return value if isinstance(value, float) else float(value)
        if tag == "tag:yaml.org,2002:bool":
            return _constructor.construct_yaml_bool(node)
        if tag == "tag:yaml.org,2002:null":
            return None
        # YAML 1.2 floats that YAML 1.1 reads as strings (1e21, 1.5e3): plain scalars only.
        if not event.style and event.tag is None and _FLOAT_12.match(event.value):
            return float(event.value)
        # str, and implicit timestamps: keep the text (dates are validated by the models).
        return event.value


def is_finite_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
