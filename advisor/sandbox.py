"""A user's report template is untrusted input: it is loaded, compiled and rendered here.

The threat: in CI, whoever opens a pull request controls the files in the checkout, the
``--template`` file among them. So:

- **Loading.** Only the named template is loaded, and what it ``include``s, ``import``s or
  ``extends`` is looked up in the template's own directory only: no absolute names, no ``..``,
  no dotfiles or dot directories (nothing under ``.git``), no symlinks (the template itself, any
  directory between the working directory and it, any included file), regular files only, each at
  most :data:`MAX_TEMPLATE_BYTES`.
- **Rendering** happens in a forked child process whose address space
  (``resource.RLIMIT_AS``), CPU time and wall-clock time are limited *before* Jinja2 is imported
  and the template compiled; the parent kills it at the deadline. A template that exhausts the
  limits is an input error (exit 2), never a hang, a traceback or an out-of-memory kill of the CI
  job.
- **The environment** is Jinja2's immutable sandbox (no attribute internals, no mutation of
  lists and dicts) with a filter allowlist; the filters and string methods that allocate from a
  number (``center``, ``indent``, ``batch``, ``slice``, ``format`` and ``%`` widths,
  ``str.rjust`` …) refuse numbers above :data:`MAX_WIDTH`; ``join``, ``replace`` and string
  repetition refuse results above :data:`MAX_OUTPUT_CHARS`; ``range`` is counted against one
  budget per render (:data:`MAX_RANGE_ITEMS`), so nested loops over ranges stop early;
  ``lipsum`` and ``random`` (allocating, non-deterministic) are gone.
"""

from __future__ import annotations

import functools
import os
import re
import stat
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MAX_TEMPLATE_BYTES = 1024 * 1024
MAX_OUTPUT_CHARS = 20_000_000
MAX_WIDTH = 10_000
MAX_RANGE_ITEMS = 200_000
MEMORY_BYTES = 512 * 1024 * 1024  # above what the parent already maps
ALLOWED_FILTERS = frozenset({
    "abs", "attr", "batch", "capitalize", "center", "count", "d", "default", "dictsort", "e", "escape",
    "filesizeformat", "first", "float", "forceescape", "format", "groupby", "indent", "int", "items", "join",
    "last", "length", "list", "lower", "map", "max", "min", "reject", "rejectattr", "replace", "reverse",
    "round", "safe", "select", "selectattr", "slice", "sort", "string", "striptags", "sum", "title", "tojson",
    "trim", "truncate", "unique", "upper", "urlencode", "wordcount", "wordwrap", "xmlattr",
})
ALLOWED_GLOBALS = ("range", "dict", "cycler", "joiner", "namespace")
_WIDTH_METHODS = frozenset({"center", "ljust", "rjust", "zfill", "expandtabs"})
_PERCENT_SPEC = re.compile(r"%(?:\([^)]*\))?[-#0 +]*(\*|\d+)?(?:\.(\*|\d+))?")


class TemplateRefused(Exception):
    """A template that may not be loaded or rendered: ``line`` in ``path``."""

    def __init__(self, message: str, path: str | None = None, line: int = 1) -> None:
        super().__init__(message)
        self.message, self.path, self.line = message, path, line


# --------------------------------------------------------------------------- loading


def _refuse_name(part: str) -> None:
    if part in ("", ".", ".."):
        raise TemplateRefused("'..', '.' and empty path segments are not allowed")
    if part.startswith("."):
        raise TemplateRefused(f"dotfiles and dot directories ('{part}') are not read")


def read_template(path: Path) -> str:
    """The text of one template file: not a symlink, a regular file, bounded, UTF-8."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        raise TemplateRefused("template file not found") from None
    except OSError as exc:
        raise TemplateRefused(f"cannot read the template ({exc.strerror or exc})") from None
    if stat.S_ISLNK(st.st_mode):
        raise TemplateRefused("the template is a symbolic link; give the file itself")
    if not stat.S_ISREG(st.st_mode):
        raise TemplateRefused("the template is not a regular file")
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise TemplateRefused(f"cannot read the template ({exc.strerror or exc})") from None
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
            raise TemplateRefused("the template is not a regular file")
        data = fh.read(MAX_TEMPLATE_BYTES + 1)
    if len(data) > MAX_TEMPLATE_BYTES:
        raise TemplateRefused(f"the template is larger than {MAX_TEMPLATE_BYTES // 1024} KiB")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise TemplateRefused(f"the template is not valid UTF-8 text (byte {exc.start})") from None


def check_template_path(template: str) -> Path:
    """The named template's path, refused when it is a dotfile, under a dot directory (``.git``),
    or reached through a symlink below the working directory. Returns the lexical absolute path."""
    given = Path(template)
    absolute = Path(os.path.abspath(template))
    _refuse_name(absolute.name)
    if any(part == ".git" for part in absolute.parts) or any(part == ".git" for part in Path(os.path.realpath(template)).parts):
        raise TemplateRefused("nothing under .git is read as a template")
    if any(part not in ("..", ".") and part.startswith(".") for part in given.parts[:-1]) and not given.is_absolute():
        # A relative path names a file of the checkout: no dot directories there.
        raise TemplateRefused("templates under dot directories are not read")
    cwd = Path(os.path.abspath(os.getcwd()))
    if absolute.is_relative_to(cwd):
        here = cwd
        for part in absolute.relative_to(cwd).parts[:-1]:
            here = here / part
            if here.is_symlink():
                raise TemplateRefused(f"'{here.relative_to(cwd)}' is a symbolic link; templates are not read through links")
    return absolute


@dataclass(frozen=True)
class TemplateFiles:
    """The named template (read up front) and its directory, where includes are looked up."""

    name: str
    source: str
    directory: Path


def load_user_template(template: str) -> TemplateFiles:
    path = check_template_path(template)
    return TemplateFiles(name=template, source=read_template(path), directory=path.parent)


def _loader(files: TemplateFiles) -> Any:
    import jinja2

    class DirectoryOnlyLoader(jinja2.BaseLoader):
        """The named template, and plain files of its directory (no links, dots, ``..``)."""

        def get_source(self, environment: Any, template: str) -> tuple[str, str | None, Callable[[], bool] | None]:
            if template == files.name:
                return files.source, files.name, lambda: True
            if "\\" in template or "\x00" in template or template.startswith("/"):
                raise jinja2.TemplateNotFound(f"'{template}': only files of the template's directory are loaded")
            parts = template.split("/")
            try:
                for part in parts:
                    _refuse_name(part)
                here = files.directory
                for part in parts[:-1]:
                    here = here / part
                    if here.is_symlink():
                        raise TemplateRefused(f"'{part}' is a symbolic link")
                source = read_template(files.directory.joinpath(*parts))
            except TemplateRefused as exc:
                raise jinja2.TemplateNotFound(f"'{template}': {exc.message}") from None
            return source, str(files.directory.joinpath(*parts)), lambda: True

    return DirectoryOnlyLoader()


# --------------------------------------------------------------------------- the environment


def _int_args(name: str, args: Iterable[Any]) -> None:
    for a in args:
        if isinstance(a, int) and not isinstance(a, bool) and abs(a) > MAX_WIDTH:
            raise ValueError(f"{name}: {a} is too large in a template (at most {MAX_WIDTH})")


def _check_percent(fmt: str) -> None:
    for m in _PERCENT_SPEC.finditer(fmt):
        for g in m.groups():
            if g == "*":
                raise ValueError("format: '*' widths are not allowed in a template")
            if g and int(g) > MAX_WIDTH:
                raise ValueError(f"format: width {g} is too large in a template (at most {MAX_WIDTH})")


def _check_brace_format(fmt: str) -> None:
    import string

    try:
        fields = list(string.Formatter().parse(fmt))
    except ValueError as exc:
        raise ValueError(f"format: {exc}") from None
    for _literal, _field, spec, _conv in fields:
        if not spec:
            continue
        if "{" in spec:
            raise ValueError("format: nested format specifications are not allowed in a template")
        for num in re.findall(r"\d+", spec):
            if int(num) > MAX_WIDTH:
                raise ValueError(f"format: width {num} is too large in a template (at most {MAX_WIDTH})")


def _bounded_join(sep: str, items: Iterable[Any]) -> None:
    total = 0
    for n, item in enumerate(items):
        total += len(str(item)) + (len(sep) if n else 0)
        if total > MAX_OUTPUT_CHARS:
            raise ValueError(f"join: the result would exceed {MAX_OUTPUT_CHARS} characters")


def environment(files: TemplateFiles) -> Any:
    """The sandboxed Jinja2 environment for a user template (call in the render child)."""
    import jinja2

    env = _limited_sandbox()(
        loader=_loader(files), autoescape=False, keep_trailing_newline=True, trim_blocks=True, lstrip_blocks=True,
        undefined=jinja2.StrictUndefined,
    )
    env.filters = _bounded_filters(env.filters)
    env.globals = {k: env.globals[k] for k in ALLOWED_GLOBALS if k in env.globals}
    env.globals["range"] = _counted_range()
    return env


def _counted_range() -> Callable[..., range]:
    """``range`` counted against one budget of MAX_RANGE_ITEMS items for everything one environment renders."""
    budget = [MAX_RANGE_ITEMS]

    def counted_range(*args: int) -> range:
        r = range(*args)
        budget[0] -= len(r)
        if budget[0] < 0:
            raise ValueError(f"range: more than {MAX_RANGE_ITEMS} items in all in one template")
        return r

    return counted_range


def _bounded(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    """The filter ``fn`` refusing numbers above MAX_WIDTH in its arguments. The wrapper keeps the
    filter's ``@pass_environment`` / ``@pass_context`` mark (``functools.wraps`` copies it), without
    which Jinja2 would not pass ``truncate`` and ``wordwrap`` their environment."""
    skip = 2 if getattr(fn, "jinja_pass_arg", None) is not None else 1  # (environment,) value, then arguments

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        _int_args(name, [*args[skip:], *kwargs.values()])
        return fn(*args, **kwargs)

    return wrapper


def _format_filter(value: Any, *args: Any, **kwargs: Any) -> str:
    from jinja2 import filters as jf

    _check_percent(str(value))
    return str(jf.do_format(str(value), *args, **kwargs))


def _join_filter(eval_ctx: Any, value: Any, d: str = "", attribute: Any = None) -> str:
    from jinja2 import filters as jf

    items = list(value)
    _bounded_join(str(d), items if attribute is None else [jf.make_attrgetter(eval_ctx.environment, attribute)(x) for x in items])
    return str(jf.do_join(eval_ctx, items, d, attribute))


def _replace_filter(eval_ctx: Any, s: Any, old: str, new: str, count: int | None = None) -> str:
    from jinja2 import filters as jf

    text = str(s)
    hits = text.count(str(old)) if count is None else min(count, text.count(str(old)))
    if len(text) + hits * max(0, len(str(new)) - len(str(old))) > MAX_OUTPUT_CHARS:
        raise ValueError(f"replace: the result would exceed {MAX_OUTPUT_CHARS} characters")
    return str(jf.do_replace(eval_ctx, s, old, new, count))


def _bounded_filters(filters: dict[str, Any]) -> dict[str, Any]:
    """The allowlisted filters, those that allocate from a number or build long strings bounded."""
    import jinja2

    kept = {k: v for k, v in filters.items() if k in ALLOWED_FILTERS}
    for name in ("center", "indent", "batch", "slice", "truncate", "wordwrap"):
        kept[name] = _bounded(name, filters[name])
    kept["format"] = _format_filter
    kept["join"] = jinja2.pass_eval_context(_join_filter)
    kept["replace"] = jinja2.pass_eval_context(_replace_filter)
    return kept


def _check_binop(operator: str, left: Any, right: Any) -> None:
    """Refuses a ``**`` exponent, a ``%`` width or a ``*`` repetition too large for a template."""
    if operator == "**" and isinstance(right, (int, float)) and abs(right) > 64:
        raise ValueError("exponent too large in a template")
    if operator == "%" and isinstance(left, str):
        _check_percent(left)
    if operator == "*":
        size = max(
            len(left) if isinstance(left, (str, list, tuple)) else 0, len(right) if isinstance(right, (str, list, tuple)) else 0
        )
        count = right if isinstance(right, int) else left if isinstance(left, int) else 1
        limit = MAX_OUTPUT_CHARS if isinstance(left, str) or isinstance(right, str) else MAX_RANGE_ITEMS
        if size and isinstance(count, int) and size * count > limit:
            raise ValueError("repetition too large in a template")


def _check_str_call(obj: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, ...]:
    """Refuses a str method call whose width or result is too large; the arguments to call it with
    (a ``join``'s items read once)."""
    owner = getattr(obj, "__self__", None)
    name = getattr(obj, "__name__", "")
    if isinstance(owner, str):
        if name in _WIDTH_METHODS:
            _int_args(f"str.{name}", [*args, *kwargs.values()])
        elif name == "join" and args:
            items = list(args[0])
            _bounded_join(owner, items)
            args = (items, *args[1:])
        elif name == "replace" and len(args) >= 2:
            hits = owner.count(str(args[0]))
            if len(owner) + hits * max(0, len(str(args[1])) - len(str(args[0]))) > MAX_OUTPUT_CHARS:
                raise ValueError(f"str.replace: the result would exceed {MAX_OUTPUT_CHARS} characters")
    return args


def _limited_sandbox() -> type[Any]:
    """Jinja2's immutable sandbox with ``*``, ``**``, ``%``, ``str.format`` and str method calls bounded."""
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    class LimitedSandbox(ImmutableSandboxedEnvironment):
        intercepted_binops = frozenset({"*", "**", "%"})

        def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
            _check_binop(operator, left, right)
            return super().call_binop(context, operator, left, right)

        def wrap_str_format(self, value: Any) -> Any:
            owner = getattr(value, "__self__", None)
            if isinstance(owner, str) and getattr(value, "__name__", "") in ("format", "format_map"):
                _check_brace_format(owner)
            return super().wrap_str_format(value)

        def call(__self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:
            args = _check_str_call(__obj, args, kwargs)
            return super().call(__context, __obj, *args, **kwargs)

    return LimitedSandbox


# --------------------------------------------------------------------------- the child process


def _template_line(exc: BaseException, files: TemplateFiles) -> tuple[str, int]:
    """Where in the user's templates ``exc`` was raised (Jinja2 rewrites frames to template lines)."""
    where, line = files.name, 1
    tb = exc.__traceback__
    names = {files.name, str(files.directory)}
    while tb is not None:
        fname = tb.tb_frame.f_code.co_filename
        if fname == files.name or fname.startswith(str(files.directory) + os.sep) or fname in names:
            where, line = fname, tb.tb_lineno
        tb = tb.tb_next
    return where, line


def _limit_self(seconds: int) -> None:
    import resource
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C and kills us
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        with open("/proc/self/statm") as fh:
            mapped = int(fh.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError):
        mapped = 0
    if mapped:
        limit = mapped + MEMORY_BYTES
        _soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        if hard != resource.RLIM_INFINITY:
            limit = min(limit, hard)
        resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    _cpu_soft, cpu_hard = resource.getrlimit(resource.RLIMIT_CPU)
    used = int(sum(os.times()[:2])) + seconds + 1
    if cpu_hard == resource.RLIM_INFINITY or used < cpu_hard:
        resource.setrlimit(resource.RLIMIT_CPU, (used, cpu_hard))
    signal.alarm(seconds)


def _child(conn: Any, files: TemplateFiles, context: dict[str, Any], seconds: int) -> None:
    try:
        _limit_self(seconds)  # before Jinja2 is imported and the template compiled
        import jinja2

        env = environment(files)
        try:
            tpl = env.get_template(files.name)
            text = tpl.render(**context)
            if len(text) > MAX_OUTPUT_CHARS:
                raise ValueError(f"output exceeds {MAX_OUTPUT_CHARS} characters")
        except jinja2.TemplateSyntaxError as exc:
            conn.send(("error", exc.filename or files.name, exc.lineno or 1, f"template error: {exc.message}"))
            return
        except jinja2.TemplateNotFound as exc:
            conn.send(("error", files.name, 1, f"template error: refused to load {exc.message}"))
            return
        except RecursionError:
            conn.send(("error", files.name, 1, "template error: recursion too deep"))
            return
        except MemoryError:
            conn.send(("error", files.name, 1, f"template error: rendering needs more than {MEMORY_BYTES // 2**20} MiB of memory"))
            return
        except Exception as exc:
            where, line = _template_line(exc, files)
            detail = str(exc).splitlines()[0][:300] if str(exc) else ""
            conn.send(("error", where, line, f"template error: {type(exc).__name__}" + (f": {detail}" if detail else "")))
            return
        conn.send(("ok", text.encode("utf-8", "surrogatepass")))
    except MemoryError:
        conn.send(("error", files.name, 1, f"template error: rendering needs more than {MEMORY_BYTES // 2**20} MiB of memory"))
    finally:
        conn.close()


def _death(code: int | None, seconds: int) -> str:
    import signal

    if code in (-signal.SIGALRM, -getattr(signal, "SIGXCPU", signal.SIGALRM)):
        return f"template error: rendering took longer than {seconds} s"
    if code is not None and code < 0:
        return f"template error: rendering was stopped by signal {-code} (a memory or time limit)"
    return f"template error: rendering stopped with exit status {code}"


def render_in_child(files: TemplateFiles, context: dict[str, Any], seconds: int) -> str:
    """Render ``files`` with ``context`` in a limited child; :class:`TemplateRefused` on any failure."""
    import multiprocessing

    if "fork" not in multiprocessing.get_all_start_methods():  # pragma: no cover (Windows)
        raise TemplateRefused("custom templates need a POSIX system (fork)", files.name)
    mp = multiprocessing.get_context("fork")
    parent, child = mp.Pipe(duplex=False)
    proc = mp.Process(target=_child, args=(child, files, context, seconds), daemon=True)
    proc.start()
    child.close()
    try:
        if not parent.poll(seconds + 1):
            raise TemplateRefused(f"template error: rendering took longer than {seconds} s", files.name)
        try:
            reply = parent.recv()
        except (EOFError, OSError):
            proc.join(1)
            raise TemplateRefused(_death(proc.exitcode, seconds), files.name) from None
    finally:
        if proc.is_alive():
            proc.kill()
        proc.join()
        parent.close()
    if reply[0] == "ok":
        return str(reply[1].decode("utf-8", "surrogatepass"))
    _, where, line, message = reply
    raise TemplateRefused(message, where, line)
