"""Which files a run of ``advisor check`` reads: paths, directories and globs expanded; ``--exclude``
globs, the policy's ``exclude`` and ``.gitignore`` files honoured; virtual environments and
a Helm chart directory read as one unit (rendered with ``helm template`` when ``helm`` is on PATH,
else by advisor's own reader of the chart's templates and values, ``infra.helmlite``); every
kustomization file noted, to be built when it transforms its resources (``infra.kustomize``).

A file git tracks is always read, whatever a ``.gitignore`` says or however its name starts: the
pull request under review writes the ``.gitignore`` files too, and ``git add -f`` commits an
ignored file (git itself applies ``.gitignore`` to untracked files only). Only ``--exclude`` and
the policy's ``exclude``, which the workflow owns, leave out a tracked file. Where git is not
installed or the directory is not a work tree, the ``.gitignore`` files alone decide.

Glob semantics (``--exclude``, ``exclude:`` and ``.gitignore``), deliberately simple and tested:
a pattern without ``/`` matches any single path component (``venv`` excludes every ``venv``
directory and what it holds, ``*.tf`` every Terraform file); a pattern with ``/`` matches the
path relative to the base (the working directory, the policy file's or the ``.gitignore``'s
directory) from its start, ``*`` and ``?`` stay inside one component, ``**`` spans any number;
a trailing ``/`` matches directories only; in a ``.gitignore`` a leading ``!`` re-includes
and ``#`` starts a comment.
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from advisor.errors import EnvironmentFault, InputError, Problem
from advisor.yamlsrc import OUTSIDE as OUTSIDE  # re-exported: the readers of the gate import them from here
from advisor.yamlsrc import escapes as escapes
from advisor.yamlsrc import git_root as _git_root
from advisor.yamlsrc import linked_outside, set_checked
from advisor.yamlsrc import read_boundary as _boundary
from advisor.yamlsrc import upward as _upward

# Terraform's configuration files: OpenTofu loads *.tofu beside *.tf (and in their place where both are written)
TF_SUFFIXES = (".tf", ".tofu")
SUFFIXES = (".yaml", ".yml", ".json", *TF_SUFFIXES)
KUSTOMIZATIONS = ("kustomization.yaml", "kustomization.yml", "Kustomization")  # as kustomize looks for them
# hidden names that are infrastructure by convention: read even where git does not track them (a copy, an archive)
HIDDEN_READ = (".dstack.yml", ".dstack.yaml")  # dstack's default configuration file name
PRUNED_DIRS = {"node_modules": "node_modules (JavaScript dependencies)", "__pycache__": "Python byte-code cache"}
MAX_FILES = 200_000


@dataclass
class Selection:
    files: list[str] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (path, why)
    excluded: int = 0  # files left out by --exclude, the policy's exclude or .gitignore
    charts: list[str] = field(default_factory=list)  # Helm chart directories to render (helm template, else helmlite)
    kustomizations: list[str] = field(default_factory=list)  # kustomization files to build (infra.kustomize)
    # tracked files under a hidden name (.github/, .ci.yaml): read, and not listed as skipped when
    # they hold no accelerator request (CI configuration, linters' settings)
    quiet: set[str] = field(default_factory=set)
    refused: list[Problem] = field(default_factory=list)  # files that must not be read (input errors)


_POSIX_CLASSES: dict[str, Callable[[str], bool]] = {
    "alpha": str.isalpha, "digit": str.isdigit, "alnum": str.isalnum, "upper": str.isupper, "lower": str.islower,
    "space": str.isspace, "xdigit": lambda ch: ch in "0123456789abcdefABCDEF",
    "punct": lambda ch: ch.isprintable() and not ch.isalnum() and not ch.isspace(),
}


def _char_class(body: str) -> Callable[[str], bool]:
    """A glob's ``[...]`` body as a predicate: ranges (a reversed one matches nothing, as in git), POSIX classes
    ([:alpha:]; an unknown one matches nothing), ``!`` / ``^`` negation."""
    negate = body[:1] in ("!", "^")
    body = body[1:] if negate else body
    singles: set[str] = set()
    ranges: list[tuple[str, str]] = []
    preds: list[Callable[[str], bool]] = []
    i = 0
    while i < len(body):
        if body.startswith("[:", i) and (j := body.find(":]", i + 2)) >= 0:
            preds.append(_POSIX_CLASSES.get(body[i + 2 : j], lambda _ch: False))
            i = j + 2
            continue
        ch = body[i + 1] if body[i] == "\\" and i + 1 < len(body) else body[i]
        i += 2 if body[i] == "\\" and i + 1 < len(body) else 1
        if i + 1 < len(body) and body[i] == "-":
            hi = body[i + 1]
            ranges.append((ch, hi))
            i += 2
        else:
            singles.add(ch)

    def member(ch: str) -> bool:
        hit = ch in singles or any(lo <= ch <= hi for lo, hi in ranges) or any(p(ch) for p in preds)
        return hit != negate

    return member


def _class_end(pattern: str, i: int) -> int:
    """Where the bracket expression opened at ``i`` closes (-1: it does not): a ``]`` right after ``[`` or ``[!`` is a
    member, ``[:alpha:]`` a class of its own, a backslash escapes."""
    k = i + 1
    if pattern[k : k + 1] in ("!", "^"):
        k += 1
    if pattern[k : k + 1] == "]":
        k += 1
    while k < len(pattern):
        if pattern.startswith("[:", k) and (j := pattern.find(":]", k + 2)) >= 0:
            k = j + 2
        elif pattern[k] == "]":
            return k
        else:
            k += 2 if pattern[k] == "\\" else 1
    return -1


class _Glob:
    """A .gitignore pattern matched over a whole string without backtracking (a set of token positions advanced one
    character at a time: time linear in the string's length times the pattern's), never a regex whose backtracking a
    pattern of the change (``*a*a*a*a*a*b``) makes exponential against a long name. ``*`` and ``?`` stay within one
    path component, ``**/`` is any number of whole directories, ``**`` anything."""

    def __init__(self, pattern: str) -> None:
        toks: list[tuple[str, Any]] = []
        i = 0
        while i < len(pattern):
            c = pattern[i]
            if pattern.startswith("**/", i):
                toks.append(("dirs", None))
                i += 3
                continue
            if pattern.startswith("**", i):
                toks.append(("all", None))
                i += 2
                continue
            if c == "*":
                if not toks or toks[-1][0] != "star":  # ** within a name is *; runs of * are one
                    toks.append(("star", None))
            elif c == "?":
                toks.append(("one", None))
            elif c == "[" and (j := _class_end(pattern, i)) >= 0:
                toks.append(("class", _char_class(pattern[i + 1 : j])))
                i = j
            elif c == "\\" and i + 1 < len(pattern):
                toks.append(("lit", pattern[i + 1]))
                i += 1
            else:
                toks.append(("lit", c))
            i += 1
        self.toks = toks

    def _closure(self, states: set[int]) -> set[int]:
        """``states`` with every position an empty match reaches (``*``, ``**``, ``**/`` match nothing too)."""
        out, todo = set(states), [t for t in states if t >= 0]
        while todo:
            t = todo.pop()
            if t < len(self.toks) and self.toks[t][0] in ("star", "all", "dirs") and t + 1 not in out:
                out.add(t + 1)
                todo.append(t + 1)
        return out

    def match(self, text: str) -> bool:
        """Whether the pattern matches all of ``text``. A state is a token position; -(t + 1) is inside the ``**/`` at
        t (any characters, left only after a slash)."""
        states = self._closure({0})
        end = len(self.toks)
        for ch in text:
            nxt: set[int] = set()
            for t in states:
                if t < 0:  # inside a **/: anything, and a slash may end it
                    nxt.add(t)
                    if ch == "/":
                        nxt.add(-t)
                    continue
                if t == end:
                    continue
                kind, arg = self.toks[t]
                if kind == "lit":
                    if ch == arg:
                        nxt.add(t + 1)
                elif kind == "one":
                    if ch != "/":
                        nxt.add(t + 1)
                elif kind == "class":
                    if ch != "/" and arg(ch):
                        nxt.add(t + 1)
                elif kind == "star":
                    if ch != "/":
                        nxt.add(t)
                elif kind == "all":
                    nxt.add(t)
                else:  # dirs: its first character
                    nxt.add(-(t + 1))
                    if ch == "/":
                        nxt.add(t + 1)
            if not nxt:
                return False
            states = self._closure(nxt)
        return end in states


@lru_cache(maxsize=4096)
def _regex(pattern: str) -> _Glob:
    return _Glob(pattern)


@dataclass(frozen=True)
class Pattern:
    text: str
    base: str  # absolute directory the pattern is relative to
    negate: bool = False
    dir_only: bool = False
    anchored: bool = False

    @staticmethod
    def parse(line: str, base: str) -> Pattern | None:
        text = line.rstrip("\n").rstrip("\r")
        if not text.strip() or text.startswith("#"):
            return None
        text = text.rstrip() if not text.endswith("\\ ") else text
        negate = text.startswith("!")
        if negate:
            text = text[1:]
        if text.startswith("\\"):
            text = text[1:]
        dir_only = text.endswith("/")
        text = text.rstrip("/")
        if text.startswith("./"):
            text = text[2:]
        anchored = "/" in text
        text = text.lstrip("/")
        if not text:
            return None
        return Pattern(text, base, negate, dir_only, anchored)

    def matches(self, abspath: str, is_dir: bool) -> bool:
        """Whether the path (or, for a file, one of its directories) matches."""
        try:
            rel = os.path.relpath(abspath, self.base)
        except ValueError:
            return False
        if rel == "." or rel.startswith(".."):
            return False
        rel = rel.replace(os.sep, "/")
        parts = rel.split("/")
        rx = _regex(self.text)
        # the path itself, then each directory above it
        for n in range(len(parts), 0, -1):
            here_is_dir = is_dir or n < len(parts)
            if self.dir_only and not here_is_dir:
                continue
            if self.anchored:
                if rx.match("/".join(parts[:n])):
                    return True
            elif rx.match(parts[n - 1]):
                return True
        return False


def patterns(globs: Iterable[str], base: str) -> list[Pattern]:
    out = []
    for g in globs:
        p = Pattern.parse(g, os.path.abspath(base))
        if p is not None:
            out.append(p)
    return out


def _ignored(abspath: str, is_dir: bool, rules: list[Pattern]) -> bool:
    ignored = False
    for p in rules:
        if p.negate == ignored and p.matches(abspath, is_dir):
            ignored = not p.negate
    return ignored


def _gitignore(directory: str) -> list[Pattern]:
    path = os.path.join(directory, ".gitignore")
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            lines = fh.read(1_000_000).splitlines()
    except OSError:
        return []
    return [p for p in (Pattern.parse(line, directory) for line in lines[:10_000]) if p is not None]


@dataclass(frozen=True)
class Tracked:
    """What git tracks in the repository around a directory (absolute paths)."""

    files: frozenset[str]
    dirs: frozenset[str]  # every directory holding a tracked file, the root excluded

    def has(self, path: str, is_dir: bool) -> bool:
        return path in (self.dirs if is_dir else self.files)


def tracked(top: str) -> Tracked | None:
    """The files ``git ls-files`` lists for the repository holding ``top``; None outside one or without git (the
    repository's hooks and fsmonitor are not run). The repository is named safe on the command line (git's "dubious
    ownership" refusal of a checkout another user owns: a container job in CI); where git still fails, the run stops
    (EnvironmentFault, exit 4): the .gitignore files of the change must not decide alone which committed file is read."""
    root = _git_root(top)
    git = shutil.which("git")
    if root is None or git is None:
        return None
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", "LC_ALL", "SYSTEMROOT")}
    env.update(GIT_CONFIG_NOSYSTEM="1", GIT_OPTIONAL_LOCKS="0", GIT_TERMINAL_PROMPT="0")
    try:
        run = subprocess.run(
            [git, "-c", "core.fsmonitor=false", "-c", f"safe.directory={root}", "-C", root, "ls-files", "-z", "--cached"],
            capture_output=True, timeout=60, env=env, stdin=subprocess.DEVNULL, check=False,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        raise EnvironmentFault(root, "list the files git tracks (git ls-files)", str(exc)[:200]) from None
    if run.returncode != 0:
        why = run.stderr.decode("utf-8", "replace").strip().splitlines()
        if any("not a git repository" in line for line in why):
            return None  # a .git that holds no repository (a fixture's boundary marker): as outside one
        raise EnvironmentFault(
            root, "list the files git tracks (git ls-files)",
            f"{(why[0] if why else f'exit {run.returncode}')[:200]}; without it a .gitignore of the change could hide a "
            "committed file: fix git, or pass the files to check",
        )
    files = frozenset(os.path.join(root, *p.split("/")) for p in run.stdout.decode("utf-8", "surrogateescape").split("\0") if p)
    dirs: set[str] = set()
    for f in files:
        d = os.path.dirname(f)
        while len(d) > len(root) and d not in dirs:
            dirs.add(d)
            d = os.path.dirname(d)
    return Tracked(files, frozenset(dirs))


def _inherited_gitignores(top: str) -> list[Pattern]:
    """``.gitignore`` files of the directories above ``top`` inside its repository."""
    root = _git_root(top)
    if root is None:
        return []
    chain = []
    d = os.path.abspath(top)
    while True:
        d = os.path.dirname(d)
        if len(d) < len(root):
            break
        chain.append(d)
        if d == root:
            break
    out: list[Pattern] = []
    for d in reversed(chain):
        out += _gitignore(d)
    return out


def boundary(path: str) -> str:
    """What a file may read from (a kustomization's bases, a chart's files): its repository's work tree, else the working directory."""
    return _boundary(path)


def escaping_link(directory: str, boundary: str, limit: int = 20_000) -> str | None:
    """A symbolic link under ``directory`` that resolves outside ``boundary`` (a Helm chart's
    ``.Files.Get`` would read it into the rendered manifests), else None; the first ``limit``
    entries are looked at and a larger chart counts as one."""
    seen = 0
    for d, dirs, names in os.walk(directory, followlinks=False):
        for name in dirs + names:
            seen += 1
            path = os.path.join(d, name)
            if seen > limit or (os.path.islink(path) and escapes(path, boundary)):
                return path
    return None


def _chart(chart: str, sel: Selection) -> None:
    """A Helm chart directory, rendered as one unit; refused when it links outside the repository."""
    link = escaping_link(chart, _boundary(os.path.join(chart, "Chart.yaml")))
    if link is not None:
        sel.refused.append(Problem(link, 1, 1, OUTSIDE))
    elif chart not in sel.charts:
        sel.charts.append(chart)


def helm() -> str | None:
    return shutil.which("helm")


def chart_of(path: str) -> str | None:
    """The Helm chart directory holding this file (a directory with a Chart.yaml above it)."""
    return _upward(os.path.dirname(os.path.abspath(path)), "Chart.yaml", os.path.isfile, 32)


CHART_DIRS = ("templates", "charts", "crds")  # what Helm renders or installs of a chart
CHART_FILE = re.compile(r"(Chart\.(yaml|lock)|values[\w.-]*\.ya?ml|values\.schema\.json|requirements\.(yaml|lock))")


def chart_owns(chart: str, path: str) -> bool:
    """Whether the chart at ``chart`` reads ``path`` itself: its templates, subcharts and CRDs, its
    Chart.yaml and values files. Anything else in the chart's directory (a manifest, a Terraform file,
    a profile beside it) is read as it would be anywhere: a Chart.yaml does not hide a directory."""
    rel = Path(os.path.relpath(os.path.abspath(path), os.path.abspath(chart))).parts
    if not rel or rel[0] == "..":
        return False
    return rel[0] in CHART_DIRS or (len(rel) == 1 and CHART_FILE.fullmatch(rel[0]) is not None)


def select(
    paths: Iterable[str], exclude: Iterable[str] = (), policy_exclude: Iterable[str] = (), policy_base: str | None = None
) -> Selection:
    """Files as given; directories recursively (*.yaml, *.yml, *.json, *.tf); glob patterns expanded."""
    paths = list(paths)
    set_checked(paths)  # what a file outside any git work tree may read within (yamlsrc.read_boundary)
    sel = Selection()
    user = patterns(exclude, os.getcwd()) + patterns(policy_exclude, policy_base or os.getcwd())
    problems: list[Problem] = []
    seen: set[str] = set()

    def add(path: str) -> None:
        if path not in seen:
            seen.add(path)
            sel.files.append(path)

    listed: dict[str, Tracked | None] = {}  # git ls-files of each repository the patterns reach, asked once
    for raw in paths:
        if raw == "-":
            add(raw)
            continue
        if any(ch in raw for ch in "*?[") and not os.path.exists(raw):
            # hidden names too (glob skips them): a committed k8s/.gpu.yaml is read as the directory walk reads it
            matches = sorted(glob.glob(raw, recursive=True, include_hidden=True))
            if not matches:
                problems.append(Problem(raw, 1, 1, "pattern matches no file"))
            for m in matches:
                if os.path.isdir(m) or not _glob_keeps(m, listed):
                    continue
                _explicit(m, user, sel, add)
            continue
        if os.path.isdir(raw):
            _walk(raw, user, sel, add)
            continue
        _explicit(raw, user, sel, add)
    if problems:
        raise InputError(problems)
    return sel


# Jsonnet, which Argo CD evaluates in a directory application (every *.jsonnet) and Tanka and kubecfg deploy: not
# evaluated here, so one that names accelerators stops the run (never passed over), and another is listed as skipped
JSONNET = (".jsonnet", ".libsonnet")
# (the chip resources and accelerator selectors only: a Grafana mixin's dashboards say "GPU" without asking for one)
_ACCELERATOR_TEXT = re.compile(r"nvidia\.com/(?:gpu|mig)|amd\.com/gpu|google\.com/tpu|aws\.amazon\.com/neuron|habana\.ai/gaudi"
                               r"|gke-accelerator|gke-tpu-accelerator|karpenter\.k8s\.aws/instance-gpu")


# a container's limits / requests or a node selector whose field name Jsonnet computes ({ [res]: 8 }): the resource or
# label it names is known only once evaluated (review 29: vendor + '.com/' + 'g' + 'pu' as a limits key passed as naming
# no accelerator). A computed value (limits: self.requests + { cpu: '250m' }, kube-prometheus) names no resource
_COMPUTED_ASK = re.compile(r"\b(?:limits|requests|nodeSelector)\s*:[^\n]*?\{[^{}]*\[")


def _jsonnet(path: str, sel: Selection) -> None:
    try:
        with open(path, "rb") as f:
            text = f.read(4 * 1024 * 1024).decode("utf-8", "replace")
    except OSError as exc:
        sel.skipped.append((path, f"Jsonnet, not readable: {exc.strerror or exc}"))
        return
    hit = _ACCELERATOR_TEXT.search(text) or _COMPUTED_ASK.search(text)
    if hit is None:
        sel.skipped.append((path, "Jsonnet (not evaluated by advisor) that names no accelerator"))
        return
    line = text.count("\n", 0, hit.start()) + 1
    col = hit.start() - (text.rfind("\n", 0, hit.start()) + 1) + 1
    what = f"names {hit.group(0)!r}" if hit.re is _ACCELERATOR_TEXT else f"computes what a pod asks for ({hit.group(0)[:60]!r})"
    sel.refused.append(Problem(path, line, col, f"Jsonnet {what}, and advisor does not evaluate Jsonnet (Argo "
                               "CD deploys every *.jsonnet of a directory application): check its output instead, "
                               "jsonnet FILE | advisor check -"))


def _glob_keeps(path: str, listed: dict[str, Tracked | None]) -> bool:
    """Whether a file a pattern matched is read: one under a hidden name only where git tracks it (or there is no git:
    then it is read), as the directory walk decides; never one under .git. ``listed``: git ls-files by repository root,
    filled as the patterns reach each (one git call per repository, not per file)."""
    parts = Path(path).parts
    if ".git" in parts:
        return False
    if not any(p.startswith(".") and p not in (".", "..") and p not in HIDDEN_READ for p in parts):
        return True
    here = os.path.dirname(path) or "."
    root = _git_root(here) or ""
    if root not in listed:
        listed[root] = tracked(here)
    known = listed[root]
    return known is None or known.has(os.path.abspath(path), False)


TFVARS = ("terraform.tfvars", "terraform.tfvars.json")  # Terraform loads these first, then *.auto.tfvars(.json) by name
AUTO_TFVARS = (".auto.tfvars", ".auto.tfvars.json")


def auto_loaded(name: str) -> bool:
    """Whether ``terraform plan`` loads this variable-values file by itself (else only with -var-file)."""
    return os.path.basename(name) in TFVARS or name.endswith(AUTO_TFVARS)


def _explicit(path: str, user: list[Pattern], sel: Selection, add: Callable[[str], None]) -> None:
    if user and _ignored(os.path.abspath(path), False, user):
        sel.excluded += 1
        return
    if linked_outside(path):
        sel.refused.append(Problem(path, 1, 1, OUTSIDE))
        return
    if path.endswith((".tfvars", ".tfvars.json")):  # variable values: the configuration they feed is what changes
        here = os.path.dirname(path) or "."
        try:
            siblings = sorted(n for n in os.listdir(here) if n.endswith(TF_SUFFIXES))
        except OSError:
            siblings = []
        for n in siblings[:200]:
            _explicit(os.path.join(here, n) if os.path.dirname(path) else n, user, sel, add)
        if not siblings:
            sel.skipped.append((path, "Terraform variable values without a .tf file beside them to apply them to"))
        elif not auto_loaded(path):
            sel.skipped.append((path, "Terraform loads these values only with -var-file, so the .tf files beside them were checked "
                                      "with their defaults and auto-loaded values; check the plan JSON of `terraform plan "
                                      f"-var-file={os.path.basename(path)} -out plan.out` to judge them"))
        return
    chart = chart_of(path) if path.endswith((".yaml", ".yml")) else None
    if chart is not None and chart_owns(chart, path):
        _chart(chart, sel)
        return
    if os.path.basename(path) in KUSTOMIZATIONS and path not in sel.kustomizations:
        sel.kustomizations.append(path)
        if not path.endswith(SUFFIXES):
            return
    add(path)


def _walk(top: str, user: list[Pattern], sel: Selection, add: Callable[[str], None]) -> None:
    inherited = _inherited_gitignores(top)
    git: list[Tracked | None] = []  # `git ls-files`, asked the first time a .gitignore or a hidden name would leave a file out

    def kept(path: str, is_dir: bool) -> bool:
        """Whether git tracks ``path`` (then no .gitignore or hidden name leaves it out)."""
        if not git:
            git.append(tracked(top))
        return git[0] is not None and git[0].has(os.path.abspath(path), is_dir)

    boundary = os.path.realpath(_git_root(top) or top)
    # (directory, the .gitignore rules on the way down, whether a .gitignore ignores it: then only
    # its tracked files are read)
    stack: list[tuple[str, list[Pattern], bool]] = [(top, inherited, False)]
    found: list[str] = []
    while stack:
        d, rules, ignored_dir = stack.pop()
        rules = rules + _gitignore(d)
        try:
            entries = sorted(os.scandir(d), key=lambda e: e.name)
        except OSError as exc:
            sel.skipped.append((d, f"directory not readable: {exc.strerror or exc}"))
            continue
        names = {e.name for e in entries}
        chart = "Chart.yaml" in names
        if chart:  # rendered as one unit; what the chart does not own is walked as any directory
            _chart(d, sel)
        venv = "pyvenv.cfg" in names or ("conda-meta" in names and os.path.isdir(os.path.join(d, "conda-meta")))
        if venv and not kept(d, True):  # a file the pull request commits is read, whatever sits beside it
            sel.skipped.append((d, "a Python virtual environment (installed packages, not infrastructure)"))
            continue
        def excluded(path: str, is_dir: bool, rules: list[Pattern] = rules, ignored_dir: bool = ignored_dir) -> bool:
            """Left out by the user's --exclude / policy exclude, or by a .gitignore on the way down
            unless git tracks it (counted)."""
            ab = os.path.abspath(path)
            if (user and _ignored(ab, is_dir, user)) or (
                (ignored_dir or _ignored(ab, is_dir, rules)) and not kept(ab, is_dir)
            ):
                sel.excluded += 1
                return True
            return False

        subdirs = []
        for e in entries:
            path = os.path.join(d, e.name) if d not in (".",) else e.name
            try:
                is_dir = e.is_dir(follow_symlinks=False)
            except OSError:
                continue
            hidden = e.name.startswith(".") and e.name not in HIDDEN_READ
            if e.name == ".git" or (hidden and not kept(path, is_dir)):  # git never tracks a .git
                continue  # hidden and untracked: .git, .terraform, .venv
            if chart and chart_owns(d, path):
                continue
            if is_dir:
                if e.name in PRUNED_DIRS and not kept(path, True):
                    sel.skipped.append((path, PRUNED_DIRS[e.name]))
                    continue
                if excluded(path, True):
                    continue
                subdirs.append(path)
                continue
            if e.name in KUSTOMIZATIONS and e.is_file() and not excluded(path, False):
                sel.kustomizations.append(path)
            if e.name.endswith(JSONNET) and e.is_file() and not excluded(path, False):
                _jsonnet(path, sel)
                continue
            if not e.name.endswith(SUFFIXES) or not e.is_file():
                continue
            if excluded(path, False):
                continue
            if e.is_symlink() and escapes(path, boundary):
                sel.refused.append(Problem(path, 1, 1, OUTSIDE))
                continue
            found.append(path)
            if any(part.startswith(".") for part in Path(os.path.relpath(path, top)).parts if part not in (".", "..")):
                sel.quiet.add(path)
            if len(found) > MAX_FILES:
                raise InputError.single(top, 1, 1, f"more than {MAX_FILES} files to check under this directory; narrow it with --exclude")
        stack.extend((s, rules, ignored_dir or _ignored(os.path.abspath(s), True, rules)) for s in reversed(subdirs))
    for f in sorted(found):
        add(f)


def relative_to_root(path: str, root: str) -> str:
    """``path`` relative to ``root``, with forward slashes; as given when it is outside."""
    try:
        return Path(os.path.abspath(path)).relative_to(os.path.abspath(root)).as_posix()
    except ValueError:
        return Path(path).as_posix()
