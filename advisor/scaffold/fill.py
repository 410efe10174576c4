"""Placeholders filled in a shell command, aware of its quoting: ``fill_command``.

A placeholder that names a setting of ``setup.sh`` becomes ``${VAR}`` wherever bash expands it
(unquoted, in double quotes, in an unquoted heredoc; inside single quotes the quote is closed
around ``"${VAR}"``); any other gets its literal value, quoted for the context it stands in
(single or double quotes, a heredoc body quoted or not, or a bare word, where a value of several
flags is quoted word by word). Unknown placeholders stay as they are.
"""

from __future__ import annotations

import functools
import re
import shlex
from collections.abc import Mapping

from advisor.knowledge import PLACEHOLDER

_PH = PLACEHOLDER
_HEREDOC = re.compile(r"<<-?\s*(['\"]?)([A-Za-z_][A-Za-z0-9_]*)\1")
_SAFE_WORD = re.compile(r"[A-Za-z0-9_./:@%+=,-]*")


# Placeholders whose value is several shell words (flags, an install line; split as the shell would), each quoted on
# its own; the server flags a setup text
# appends to a command (' --data-parallel-size=8 --enable-expert-parallel') keep their leading space.
WORD_LISTS = frozenset({"mlx_quant", "vllm_dp_args", "vllm_budget_args", "sglang_budget_args", "sglang_dp_args", "az_count_args",
                        "remote_steps", "install_steps", "train_steps", "vllm_precision_args", "az_vm_suffix", "train_pip"})
# Word lists that may join two commands with && (nothing else of the shell's)
SEQUENCES = frozenset({"train_pip"})


def sh_word(value: str) -> str:
    """``value`` as one shell word: as it is when it needs no quoting, else single-quoted."""
    return value if _SAFE_WORD.fullmatch(value) else shlex.quote(value)


def _fill_value(name: str, ctx: str, literal: Mapping[str, str], shell: Mapping[str, str]) -> str:
    """The value of placeholder ``name`` where it stands (``ctx``: "" unquoted, "'" or '"' quoted,
    "heredoc" an unquoted heredoc body, "heredoc-literal" a quoted one): ``${VAR}`` where bash
    expands it, else its literal value quoted for that context."""
    if name in shell and ctx != "heredoc-literal":
        var = "${" + shell[name] + "}"
        return f"'\"{var}\"'" if ctx == "'" else var
    value = literal[name]
    if ctx.startswith("heredoc"):  # a line of its own would end the heredoc early: a value is one line
        value = " ".join(value.splitlines())
    if ctx == "'":
        return value.replace("'", "'\"'\"'")
    if ctx == '"':
        return re.sub(r'([\\"$`])', r"\\\1", value)
    if ctx == "heredoc":
        return re.sub(r"([\\$`])", r"\\\1", value)
    if ctx == "heredoc-literal":
        return value
    if name in WORD_LISTS:
        # an install line may be two commands joined by && (a vendor's torch from its own index, the rest from PyPI):
        # that word alone stays an operator; the words come from bundled data (rules/training-stacks.yaml, families.yaml)
        ops = {"&&"} if name in SEQUENCES else set()
        return (" " if value[:1].isspace() else "") + " ".join(w if w in ops else sh_word(w) for w in shlex.split(value))
    return sh_word(value)


def _heredoc_bodies(
    cmd: str, i: int, pending: list[tuple[str, bool]], literal: Mapping[str, str], shell: Mapping[str, str], out: list[str]
) -> int:
    """Copy the bodies of the ``pending`` heredocs (delimiter, quoted), which start at ``cmd[i]``,
    to ``out`` with their known placeholders filled; the index after the last delimiter line."""
    n = len(cmd)

    def body_sub(m: re.Match[str], ctx: str) -> str:
        known = m.group(1) in literal or m.group(1) in shell
        return _fill_value(m.group(1), ctx, literal, shell) if known else m.group(0)

    for delim, quoted in pending:
        ctx = "heredoc-literal" if quoted else "heredoc"
        while i < n:
            end = cmd.find("\n", i)
            line = cmd[i:] if end < 0 else cmd[i : end + 1]
            i += len(line)
            if line.rstrip("\n").strip("\t") == delim:
                out.append(line)
                break
            out.append(_PH.sub(functools.partial(body_sub, ctx=ctx), line))
    return i


def fill_command(cmd: str, literal: Mapping[str, str], shell: Mapping[str, str]) -> str:
    """Fill ``{placeholders}`` in a shell command, aware of its quoting.

    Placeholders named in ``shell`` become ``${VAR}`` where bash expands them
    (unquoted, in double quotes, in unquoted heredocs; inside single quotes the
    quote is closed around ``"${VAR}"``); the others get their literal value,
    quoted for the context they stand in. Unknown placeholders stay as they are.
    """
    out: list[str] = []
    state = ""  # "", "'" or '"'
    pending: list[tuple[str, bool]] = []
    i, n = 0, len(cmd)

    while i < n:
        m = _PH.match(cmd, i)
        if m and (m.group(1) in literal or m.group(1) in shell):
            out.append(_fill_value(m.group(1), state, literal, shell))
            i = m.end()
            continue
        c = cmd[i]
        if state == "'":
            if c == "'":
                state = ""
            out.append(c)
            i += 1
            continue
        if c == "\\" and i + 1 < n:
            out.append(cmd[i : i + 2])
            i += 2
            continue
        if state == '"':
            if c == '"':
                state = ""
            out.append(c)
            i += 1
            continue
        if c in "'\"":
            state = c
        elif c == "<" and (h := _HEREDOC.match(cmd, i)):
            pending.append((h.group(2), bool(h.group(1))))
            out.append(h.group(0))
            i = h.end()
            continue
        elif c == "\n" and pending:
            out.append(c)
            i = _heredoc_bodies(cmd, i + 1, pending, literal, shell, out)
            pending = []
            continue
        out.append(c)
        i += 1
    return "".join(out)
