"""Per-invocation CLI state and the console factory, shared by the CLI and its sub-commands
(one home, so that command modules need not import the CLI module that imports them)."""

from __future__ import annotations

import sys
from typing import Any

_STATE: dict[str, Any] = {"debug": False, "no_color": False, "quiet": False, "stdout_closed": False}


# Width of text output that goes to a file or a pipe when COLUMNS is not set: tables and panels
# fit it (prose wraps, long words and URLs fold, numbers stay whole), as on a terminal.
PIPE_WIDTH = 100


def _columns() -> int | None:
    """COLUMNS, when set to a usable width."""
    import os

    raw = os.environ.get("COLUMNS", "").strip()
    return int(raw) if raw.isascii() and raw.isdigit() and 0 < int(raw) <= 100_000 else None


def _width(stream: Any) -> int | None:
    """None for a terminal (rich reads COLUMNS or asks the terminal); off a terminal COLUMNS
    when set, else PIPE_WIDTH."""
    try:
        if stream.isatty():
            return None
    except (AttributeError, ValueError, OSError):
        pass
    return _columns() or PIPE_WIDTH


def _is_terminal(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False


def _console(stderr: bool = False) -> Any:
    import errno

    from rich.console import Console

    class _Console(Console):
        def on_broken_pipe(self) -> None:  # rich would exit 1; main() makes it silent with 141
            self.quiet = True
            raise BrokenPipeError(errno.EPIPE, "broken pipe")

    return _Console(
        stderr=stderr,
        no_color=_STATE["no_color"],
        highlight=False,
        markup=False,  # input-derived text ('[/x]' in a name) is shown as text, never parsed as a style
        soft_wrap=False,
        width=_width(sys.stderr if stderr else sys.stdout),
    )


def render_options(terminal: bool | None = None, **opts: Any) -> Any:
    """Options for a renderer of the registry (advisor/renderers/formats.py): text at the
    terminal's width with its colours, else at COLUMNS or 100 columns, plain."""
    from advisor.renderers.formats import RenderOptions

    if terminal is None:
        terminal = _is_terminal(sys.stdout)
    width = _console().width if terminal else _width(None)
    return RenderOptions(width=width, color=terminal and not _STATE["no_color"], **opts)
