"""Per-invocation CLI state and the console factory, shared by the CLI and its sub-commands
(one home, so that command modules need not import the CLI module that imports them)."""

from __future__ import annotations

import sys
from typing import Any

_STATE: dict[str, Any] = {"debug": False, "no_color": False, "quiet": False, "stdout_closed": False}


# Width of text output that goes to a file or a pipe (COLUMNS is for terminals): wide enough
# that no table row wraps, so each row stays one line for grep; tables and panels take only
# the width their content needs.
PIPE_WIDTH = 1000


def _width(stream: Any) -> int | None:
    """The terminal's width (rich reads COLUMNS or asks the terminal), or PIPE_WIDTH when not a terminal."""
    try:
        return None if stream.isatty() else PIPE_WIDTH
    except (AttributeError, ValueError, OSError):
        return PIPE_WIDTH


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
        soft_wrap=False,
        width=_width(sys.stderr if stderr else sys.stdout),
    )
