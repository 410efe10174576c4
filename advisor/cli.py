"""Command-line interface: parse arguments, call the library API, render, exit.

No logic lives here. Heavy modules are imported inside the commands that need
them, so ``advisor recommend`` pays only for what it uses. Exit codes: 0 ok,
1 ``check`` policy failure, 2 bad input or usage, 3 internal error, 4 the
environment failed (disk full, permission denied, read-only file system, closed
output stream), 130/143 interrupted by SIGINT/SIGTERM; a broken pipe (``| head``)
ends silently with 141, as if killed by SIGPIPE.
"""

from __future__ import annotations

import contextlib
import copy
import os
import sys
from collections.abc import Callable, Iterator
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer

from advisor import __version__
from advisor.commands.options import CatalogOpt, RulesOpt
from advisor.commands.session import _STATE, _console, _is_terminal, render_options
from advisor.renderers import formats

app = typer.Typer(
    name="advisor",
    help="Decide whether an AI workload belongs on TPUs or GPUs: which accelerator, how many, "
    "what it costs, how long it takes, and how to set it up.",
    add_completion=True,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)



# Each command's --format choices are the registry's (advisor/renderers/formats.py).
if TYPE_CHECKING:
    RecFormat = str
    EstimateFormat = str
    ReportFormat = str
    CheckFormat = str
else:
    RecFormat = formats.choices("recommend")
    EstimateFormat = formats.choices("estimate")
    ReportFormat = formats.choices("report")
    CheckFormat = formats.choices("check")


def _render(command: str, fmt: str, result: Any, *, terminal: bool | None = None, **opts: Any) -> str:
    """``result`` in the format asked for, through the registry (advisor/renderers/formats.py)."""
    return formats.render(command, str(fmt), result, render_options(terminal, **opts))


def _version(value: bool) -> None:
    if value:
        typer.echo(f"advisor {__version__}")
        raise typer.Exit(0)


_GLOBAL_FLAGS = {"--debug", "--no-color", "--quiet", "-q"}


@app.callback()
def _root(
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")] = False,
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks of internal errors.")] = False,
    no_color: Annotated[bool, typer.Option("--no-color", help="Plain output (also NO_COLOR=1).")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Only the essential output.")] = False,
) -> None:
    """Parsed here for --help; main() applies these flags from anywhere on the line."""


def _context(rules: list[Path] | None, catalog: list[Path] | None) -> Any:
    from advisor.api import Context

    return Context.load([str(r) for r in rules or []], [str(c) for c in catalog or []])


def _emit(text: str) -> None:
    # in slices: a 45 MB report is not encoded into a second 45 MB copy at once
    step = 1 << 20
    for i in range(0, len(text), step):
        sys.stdout.write(text[i : i + step])
    sys.stdout.flush()


def _note(text: str) -> None:
    """A diagnostic on stderr ("wrote FILE"): best effort, a closed or full stderr loses only the note."""
    try:
        sys.stderr.write(text)
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


@app.command()
def recommend(
    files: Annotated[list[Path], typer.Argument(help="Workload profile(s), YAML.", show_default=False)],
    fmt: Annotated[RecFormat, typer.Option("--format", "-f", help="Output format.")] = "text",
    rules: RulesOpt = None,
    catalog: CatalogOpt = None,
    no_flip: Annotated[bool, typer.Option("--no-flip", help="Skip the what-would-change-the-verdict search.")] = False,
    explain: Annotated[
        bool, typer.Option("--explain", "-v", help="Text: every point with its source, every candidate, every setup command.")
    ] = False,
) -> None:
    """Verdict, explanation, estimate and setup path for each profile."""
    from advisor.api import recommend_files

    ctx = _context(rules, catalog)
    recs = recommend_files([str(f) for f in files], ctx, with_flip=not no_flip)
    _emit(_render("recommend", fmt, recs, context=ctx, explain=explain))


@app.command()
def estimate(
    files: Annotated[
        list[str], typer.Argument(help="Workload profile(s), YAML; FILE#N: the N-th document of a multi-document file.", show_default=False)
    ],
    accelerator: Annotated[
        str,
        typer.Option(
            "--accelerator",
            "-a",
            help="Catalog id or alias (tpu-v6e, trillium, h100), TPU slice (v6e-8, v5p-128), machine type (a3-highgpu-8g, "
                 "ct6e-standard-8t) or instance type (p5.48xlarge).",
        ),
    ],
    count: Annotated[
        int | None,
        typer.Option(
            "--count",
            "-n",
            min=1,
            max=1_000_000,
            help="Chips/GPUs (per replica for inference); default: what a slice, machine or instance name fixes.",
        ),
    ] = None,
    fmt: Annotated[EstimateFormat, typer.Option("--format", "-f")] = "text",
    catalog: CatalogOpt = None,
) -> None:
    """What-if: time, cost, memory and throughput of one named configuration."""
    from advisor.api import estimate_files

    results = estimate_files(files, accelerator, count, _context(None, catalog))
    _emit(_render("estimate", fmt, results))


@app.command()
def validate(
    files: Annotated[list[Path], typer.Argument(help="Workload profile(s), YAML.", show_default=False)],
    catalog: CatalogOpt = None,
) -> None:
    """Schema check only: every problem in every file, at once."""
    from advisor.api import validate_files

    loaded = validate_files([str(f) for f in files], [str(c) for c in catalog or []])
    if not _STATE["quiet"]:
        for lp in loaded:
            typer.echo(f"{lp.label}: ok ({lp.profile.name})")


@app.command()
def report(
    files: Annotated[list[Path], typer.Argument(help="Workload profile(s); several give one comparison report.", show_default=False)],
    output: Annotated[str, typer.Option("--output", "-o", help="Output file, or - for stdout.")] = "-",
    fmt: Annotated[ReportFormat, typer.Option("--format", "-f", help="markdown (default) or json.")] = "markdown",
    template: Annotated[
        Path | None, typer.Option("--template", help="Your own Jinja2 markdown template (same view model as the default).")
    ] = None,
    timestamp: Annotated[
        bool, typer.Option("--timestamp", help="Add the generation time (off by default: output is byte-identical).")
    ] = False,
    rules: RulesOpt = None,
    catalog: CatalogOpt = None,
) -> None:
    """The markdown report to share: verdict, candidates, charts, why, setup, assumptions, sources."""
    from advisor.api import recommend_files, write_output

    ctx = _context(rules, catalog)
    recs = recommend_files([str(f) for f in files], ctx)
    stamp = None
    if timestamp:
        import datetime as dt

        stamp = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    text = _render("report", fmt, recs, terminal=False, context=ctx, template=str(template) if template else None, timestamp=stamp)
    if output == "-":
        _emit(text)
        return
    from advisor.api import refuse_links

    refuse_links(output)
    write_output(output, text)
    if not _STATE["quiet"]:
        _note(f"wrote {output}\n")


class FailOn(StrEnum):
    error = "error"
    warning = "warning"
    never = "never"


@app.command()
def check(
    paths: Annotated[
        list[str],
        typer.Argument(
            help="Proposal files, directories (recursive *.yaml/*.yml/*.json/*.tf), globs, or - for standard input.", show_default=False
        ),
    ],
    fmt: Annotated[CheckFormat, typer.Option("--format", "-f", help="Output format.")] = "text",
    fail_on: Annotated[
        FailOn | None, typer.Option("--fail-on", help="Lowest severity that fails (exit 1); default from the policy, else error.")
    ] = None,
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Write the output to FILE (atomically) instead of stdout.")] = None,
    baseline: Annotated[
        Path | None,
        typer.Option(
            "--baseline",
            help="A previous --format json result, an old Terraform plan JSON or an old directory: report new and fixed findings, chips "
            "and cost before -> after.",
        ),
    ] = None,
    config: Annotated[
        Path | None,
        typer.Option("--config", help="Policy file (default: .advisor.yaml or [tool.advisor] in pyproject.toml, searched upward)."),
    ] = None,
    no_config: Annotated[bool, typer.Option("--no-config", help="Ignore policy files.")] = False,
    policy: Annotated[
        Path | None,
        typer.Option(
            "--policy",
            help="The policy to enforce, from outside the change under review (e.g. the base branch's .advisor.yaml): no policy file is "
            "searched for, and its relative rules/catalog paths resolve against the working directory.",
        ),
    ] = None,
    rules: RulesOpt = None,
    catalog: CatalogOpt = None,
    max_cost_increase_percent: Annotated[
        float | None,
        typer.Option(
            "--max-cost-increase-percent", min=0, help="Warn when the proposal costs more than the best alternative by this percent."
        ),
    ] = None,
    disable: Annotated[list[str] | None, typer.Option("--disable", help="Check rule id to disable (repeatable).")] = None,
    exclude: Annotated[
        list[str] | None,
        typer.Option(
            "--exclude", help="Leave out files matching GLOB (repeatable; also [tool.advisor] exclude and .gitignore).", metavar="GLOB"
        ),
    ] = None,
) -> None:
    """CI gate: judge each proposal against the recommendation and the team's policy."""
    from advisor.api import run_check

    show_progress = fmt == "text" and output is None and sys.stderr.isatty() and not _STATE["quiet"]
    if output is not None:
        _output_inside(output)
    with contextlib.ExitStack() as stack, _progress_bar("checking proposals", show=show_progress) as progress:
        if output is not None:
            stack.callback(_drop_stale, output)
        report = run_check(
            paths,
            rules=[str(r) for r in rules or []],
            catalogs=[str(c) for c in catalog or []],
            config=None if config is None else str(config),
            no_config=no_config,
            policy=None if policy is None else str(policy),
            fail_on=None if fail_on is None else fail_on.value,
            max_cost_increase_percent=max_cost_increase_percent,
            disable=disable or [],
            baseline=None if baseline is None else str(baseline),
            stdin=_read_stdin() if "-" in paths else None,
            progress=progress,
            exclude=exclude or [],
        )
        stack.pop_all()  # a report to write: a failed write leaves the previous file as it was (exit 4)
    _write_check(report, fmt, output)
    raise typer.Exit(report.exit_code)


def _output_inside(output: Path) -> None:
    """Refuse an output path that passes through a symbolic link below the working directory: the change under review
    can commit `reports -> /elsewhere`, and `-o reports/advisor.md` would write outside the checkout, or commit
    `reports -> forged/` beside a forged `forged/advisor.md` for a later step to post as the report."""
    from advisor.api import refuse_links

    refuse_links(output)


def _drop_stale(output: Path) -> None:
    """No output was written (an input or usage error, exit 2): a file already at ``output`` (an earlier run's, or one
    the change commits there) is removed, so that no later step posts it as this run's report."""
    with contextlib.suppress(OSError):
        if output.is_symlink() or output.is_file():
            output.unlink()


@contextlib.contextmanager
def _progress_bar(label: str, *, show: bool) -> Iterator[Callable[[int, int], None] | None]:
    """A transient progress bar on stderr for the block, when ``show``; yields its (done, total) hook, else None."""
    if not show:
        yield None
        return
    from rich.progress import Progress

    bar = Progress(transient=True, console=_console(stderr=True))
    bar.start()
    task = bar.add_task(label, total=None)

    def progress(done: int, total: int) -> None:
        bar.update(task, completed=done, total=total)

    try:
        yield progress
    finally:
        bar.stop()


def _write_check(report: Any, fmt: str, output: Path | None) -> None:
    """The check report to ``output`` or stdout; with a machine format or a file, the invalid files' problems also to stderr."""
    from advisor.api import write_output

    text = _render("check", fmt, report, terminal=output is None and _is_terminal(sys.stdout))
    if output is not None:
        write_output(output, text)
    elif text:
        _emit(text)
    if report.invalid and not (fmt == "text" and output is None):
        # The good files were judged and reported; the bad ones also go to stderr (the text
        # report on stdout already carries these very lines).
        from advisor.fmt import log_text

        _note("".join(f"{log_text(p)}\n" for p in report.problems))


def _read_stdin() -> bytes:
    """One document stream on standard input, read once (bounded: one byte over the limit is
    enough for the reader to say it is too large)."""
    return sys.stdin.buffer.read(32 * 1024 * 1024 + 1) if sys.stdin is not None else b""


def _fail(message: str, code: int) -> NoReturn:
    try:
        sys.stderr.write(message.rstrip("\n") + "\n")
        sys.stderr.flush()
    except (OSError, ValueError, AttributeError):
        pass  # stderr is closed or broken: the exit code still tells
    sys.exit(code)


class Interrupted(BaseException):
    """SIGTERM (or another terminating signal) as an exception, so that ``finally`` blocks
    remove temp files before the process exits with 128 + the signal number."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _raise_interrupted(signum: int, frame: Any) -> None:
    raise Interrupted(signum)


def _install_signal_handlers() -> dict[int, Any]:
    """SIGINT, SIGTERM and SIGHUP raise ``Interrupted`` (unless the parent set them to be
    ignored); returns the previous handlers, which main() restores."""
    import signal

    previous: dict[int, Any] = {}
    for sig, default in ((signal.SIGINT, signal.default_int_handler), (signal.SIGTERM, signal.SIG_DFL), (signal.SIGHUP, signal.SIG_DFL)):
        try:
            current = signal.getsignal(sig)
            if current in (default, signal.SIG_DFL):
                previous[sig] = signal.signal(sig, _raise_interrupted)
        except (ValueError, OSError, AttributeError):  # not the main thread, or no such signal here
            pass
    return previous


def _restore_signal_handlers(previous: dict[int, Any]) -> None:
    import signal

    for sig, handler in previous.items():
        with contextlib.suppress(ValueError, OSError):
            signal.signal(sig, handler)


def _guard_std_streams() -> None:
    """Started with stdin, stdout or stderr closed (``>&-``): hold the descriptor with
    /dev/null so no file advisor opens lands on it. Writes to a closed stdout then fail
    (exit 4, "standard output is closed"); a closed stderr loses only the messages."""
    for fd, name, flags in ((0, "stdin", os.O_RDONLY), (1, "stdout", os.O_RDONLY), (2, "stderr", os.O_WRONLY)):
        if getattr(sys, name) is not None:
            continue
        try:
            os.fstat(fd)
        except OSError:
            try:
                held = os.open(os.devnull, flags)
                if held != fd:
                    os.dup2(held, fd)
                    os.close(held)
            except OSError:
                continue
        mode = "r" if fd == 0 else "w"
        setattr(sys, name, open(fd, mode, encoding="utf-8", errors="replace", closefd=False))  # noqa: SIM115
        if fd == 1:
            _STATE["stdout_closed"] = True


def _tolerate_encoding() -> None:
    """A non-UTF-8 locale or PYTHONIOENCODING: characters it cannot show become '?', never a crash."""
    import codecs

    for stream in (sys.stdout, sys.stderr):
        enc = getattr(stream, "encoding", None)
        if not enc or not hasattr(stream, "reconfigure"):
            continue
        try:
            if codecs.lookup(enc).name != "utf-8" and getattr(stream, "errors", "strict") == "strict":
                stream.reconfigure(errors="replace")
        except (LookupError, ValueError, OSError):
            pass


def _silence(*streams: Any) -> None:
    """After a failed write to stdout/stderr (broken pipe, full disk), point the descriptors at
    /dev/null so the interpreter's final flush of what is still buffered cannot fail again."""
    for stream in streams:
        try:
            fd = stream.fileno()
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, fd)
            os.close(null)
        except (OSError, ValueError, AttributeError):
            pass


def _environment_failure(exc: OSError) -> NoReturn:
    import errno

    from advisor.errors import describe_os_error

    if exc.filename is not None:
        what = f"{exc.filename}: {describe_os_error(exc)}"
    elif exc.errno == errno.EBADF and _STATE["stdout_closed"]:
        what = "<stdout>: cannot write: standard output is closed"
    else:  # unnamed write errors come from the output streams
        what = f"<stdout>: cannot write: {describe_os_error(exc)}"
    _silence(sys.stdout)
    _fail(f"advisor: error: {what}", 4)


def _without_pydantic_plugins() -> None:
    """The command line takes no third-party pydantic plugins (hooks a ``pydantic`` entry point
    installs to trace validation): looking for them imports ``importlib.metadata`` and scans every
    installed distribution the first time typer or a model builds a validator, ~15 ms of every run.
    Pydantic's plugin loader is stood in for by one that finds none; any other name asked of it
    loads the real loader in its place (a pydantic that asks for more works as before). A loader
    already imported is left alone, and the library API (advisor.api) never does this."""
    name = "pydantic.plugin._loader"
    if name in sys.modules:
        return
    import types

    stub = types.ModuleType(name)

    def get_plugins() -> tuple[()]:
        return ()

    def real(attr: str) -> Any:
        if attr.startswith("__"):  # what the import system asks of any module (__path__, ...)
            raise AttributeError(attr)
        import importlib

        if sys.modules.get(name) is stub:
            del sys.modules[name]
        return getattr(importlib.import_module(name), attr)

    stub.get_plugins = get_plugins  # type: ignore[attr-defined]
    stub.__getattr__ = real  # type: ignore[method-assign]
    sys.modules[name] = stub


def main(argv: list[str] | None = None) -> NoReturn:
    """Console-script entry point with the one exception boundary."""
    _without_pydantic_plugins()
    _guard_std_streams()
    _tolerate_encoding()
    previous = _install_signal_handlers()
    try:
        _run(argv)
    finally:
        _restore_signal_handlers(previous)


def _run(argv: list[str] | None) -> NoReturn:
    from advisor.errors import AdvisorError, InputError, environment_errno

    args = list(sys.argv[1:] if argv is None else argv)
    # Global flags are accepted anywhere on the line, not only before the command.
    debug = "--debug" in args
    _STATE.update(
        debug=debug,
        no_color="--no-color" in args or bool(os.environ.get("NO_COLOR")),
        quiet="--quiet" in args or "-q" in args,
    )
    args = [a for a in args if a not in _GLOBAL_FLAGS]
    try:
        try:
            rv = _app_for(args)(args=args, prog_name="advisor", standalone_mode=False)
        except typer.Exit as exc:
            rv = exc.exit_code
        except SystemExit:
            if "PacifyFlushWrapper" in type(sys.stdout).__name__:  # typer's own exit(1) on EPIPE
                raise BrokenPipeError(32, "broken pipe") from None
            raise
        sys.stdout.flush()  # a full or closed stdout fails here, inside the boundary, not at exit
    except (typer.Abort, KeyboardInterrupt):
        _fail("advisor: interrupted", 130)
    except Interrupted as exc:
        _fail("advisor: terminated" if exc.signum == 15 else "advisor: interrupted", 128 + exc.signum)
    except BrokenPipeError:
        # The reader went away (``| head``): silent, and the status a SIGPIPE death gives.
        _silence(sys.stdout, sys.stderr)
        sys.exit(141)
    except InputError as exc:
        from advisor.fmt import log_text  # the path and the message quote the input: inert in a CI log

        _fail("\n".join(log_text(p) for p in exc.problems), 2)
    except AdvisorError as exc:
        _fail(f"advisor: error: {exc}", exc.exit_code)
    except OSError as exc:
        if environment_errno(exc):
            _environment_failure(exc)
        _bug(exc, debug)
    except Exception as exc:  # the one boundary for bugs
        if hasattr(exc, "format_message") and hasattr(exc, "exit_code"):  # typer/click usage errors
            _fail(f"advisor: error: {exc.format_message()}", 2)
        _bug(exc, debug)
    # With standalone_mode=False, typer returns the code of a raised typer.Exit.
    sys.exit(rv if isinstance(rv, int) else 0)


def _app_for(args: list[str]) -> typer.Typer:
    """The app with only the command named first on the line (typer builds every registered
    command's parameters at run time, ~10 ms for all of ours; one command's is what this run
    parses); the whole app for anything else (help, --version, a group, an unknown name, shell
    completion)."""
    if not args or "_ADVISOR_COMPLETE" in os.environ:
        return app
    from typer.main import get_command_name

    mine = [ci for ci in app.registered_commands if (ci.name or get_command_name(ci.callback.__name__ if ci.callback else "")) == args[0]]
    if len(mine) != 1:
        return app
    lean = copy.copy(app)
    lean.registered_commands, lean.registered_groups = mine, []
    return lean


def _bug(exc: BaseException, debug: bool) -> NoReturn:
    if debug:
        import traceback

        traceback.print_exc()
    _fail(
        f"advisor: internal error ({type(exc).__name__}: {exc}); this is a bug in advisor {__version__}. "
        "Rerun with --debug for the traceback and report it.",
        3,
    )


from advisor.commands.authoring import init_cmd, schema_cmd  # noqa: E402
from advisor.commands.rules import rules_app  # noqa: E402

app.command("init")(init_cmd)
app.command("schema")(schema_cmd)
app.add_typer(rules_app, name="rules", help="The knowledge base: list, show and test rules.")
from advisor.commands.catalog import catalog_app  # noqa: E402
from advisor.commands.scaffold import scaffold_cmd  # noqa: E402

app.command("scaffold")(scaffold_cmd)
app.add_typer(catalog_app, name="catalog")
