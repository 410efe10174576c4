"""Number formatting shared by every renderer (one place, so every output agrees)."""

from __future__ import annotations

import re
from typing import Any


def money(x: float | None) -> str:
    """``$1,234`` from $100 up, ``$12.34`` below; ``unpriced`` for a missing price (never $0)."""
    if x is None:
        return "unpriced"
    return f"${x:,.0f}" if x >= 100 else f"${x:,.2f}"


def hours(x: float | None) -> str:
    """``45 min`` below an hour, ``6.5 h``, ``1,234 h`` from a thousand up; ``–`` when absent."""
    if x is None:
        return "–"
    if x < 1:
        return f"{x * 60:,.0f} min"
    return f"{x:,.1f} h" if x < 1000 else f"{x:,.0f} h"


# Line breaks of every kind, then the other characters no output line should carry: C0 and C1
# controls (NUL, ESC, BEL ...), DEL, and the bidirectional overrides that reorder what a reader sees.
_BREAKS = re.compile("\r\n|[\r\n\v\f\x1c-\x1e\x85\u2028\u2029]")
_CONTROLS = re.compile("[\x00-\x08\x0e-\x1f\x7f-\x84\x86-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")
# Markdown that can start structure inside a line: a backslash, code, emphasis (`*`, and `_` at a
# word boundary: GFM ignores intraword underscores), strikethrough, table pipes, raw HTML and
# autolinks (`<` before a letter, `/`, `!` or `?`), links and images (`![`, `](`, `][`, `]:`).
_MD_SPECIAL = re.compile(r"[\\`*~|]|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])|<(?=[A-Za-z/!?])|!(?=\[)|\](?=[(\[:])")
# What makes a block at the start of a line: heading, quote, list item, numbered item, link
# reference definition, fence, table row, thematic break.
_MD_LINE_START = re.compile(r"^(\s*)(#|>|[-+*](?=\s|$)|\d+[.)](?=\s|$)|\[|=|~)")
_CODE_PAIR = re.compile(r"`([^`]+)`")


def no_controls(text: str) -> str:
    """``text`` with its line breaks kept and every other control character gone (a vertical tab or form feed a space)."""
    return _CONTROLS.sub("", text.replace("\x0b", " ").replace("\x0c", " "))


def one_line(text: object) -> str:
    """``text`` on one line with no control characters: line breaks and tabs become spaces."""
    return _CONTROLS.sub("", _BREAKS.sub(" ", str(text)).replace("\t", " "))


# What a CI log reads as a command inside a line of output: GitHub Actions' runner takes a line whose text (after
# leading spaces) starts with '::' as a workflow command (::error, ::add-mask::, ::stop-commands::), and '##[' anywhere
# in a line as its legacy form (actions/runner src/Runner.Common/ActionCommand.cs, TryParseV2 / TryParse)
_LEGACY_COMMAND = re.compile(r"#(?=#\[)")
_COMMAND_KEY = re.compile(r":(?=:)")


def _inert(text: object) -> str:
    """``one_line``, and no '##[' (a CI log's legacy command form, read anywhere in a line) where markdown or HTML
    built from input is printed to a log rather than a file: a zero-width space after its first '#'."""
    return _LEGACY_COMMAND.sub("#\u200b", one_line(text))


def log_text(text: object) -> str:
    """Input-derived text for a plain-text log line: one line (``one_line``), and no '::' or '##[' a CI runner would
    read as a workflow command wherever the line folds: a zero-width space goes between the two characters (the text
    reads the same). Names never hold either in honest files."""
    return _COMMAND_KEY.sub(":\u200b", _inert(text))


# What GitHub turns into a link or a notification in plain text (GFM's extended autolinks, @-mentions of people and
# teams, e-mail addresses): a zero-width space after the '@', inside the scheme's '://' and after 'www' leaves the text
# readable and makes it no link and no mention
_AUTOLINK = re.compile(r"(?i)(?<![a-z0-9])(?:(https?|ftp)(?=://)|(www)(?=\.))|@")


def _unlinked(text: str) -> str:
    return _AUTOLINK.sub(lambda m: (m.group(1) or m.group(2) or "@") + "\u200b", text)


def md_text(text: object, *, line_start: bool = True) -> str:
    """Input-derived text safe in a markdown line: one line, markdown punctuation escaped, and (at
    the start of a line) a leading ``#``, ``>``, list or numbered-list marker escaped: no forged
    heading, quote, list, link, image or HTML, no autolink (``https://``, ``www.``) and no @-mention."""
    out = _MD_SPECIAL.sub(lambda m: "\\" + m.group(0), _unlinked(_inert(text)))
    if not line_start:
        return out
    return _MD_LINE_START.sub(lambda m: m.group(1) + m.group(2)[:-1] + "\\" + m.group(2)[-1], out, count=1)


def md_code(text: object, *, table: bool = False) -> str:
    """Input-derived text as one markdown code span: fenced with more backticks than it holds,
    padded when it starts or ends with one; no HTML escaping (a code span shows it verbatim).
    In a table cell a pipe is escaped (GFM splits cells on it even inside a code span)."""
    body = _inert(text)
    run = max((len(m) for m in re.findall(r"`+", body)), default=0)
    fence = "`" * (run + 1)
    pad = " " if body.startswith("`") or body.endswith("`") or (body.startswith(" ") and body.endswith(" ") and body.strip()) else ""
    if table:
        body = body.replace("|", "\\|")
    return f"{fence}{pad}{body}{pad}{fence}"


def md_message(text: object, *, table: bool = False, line_start: bool = True) -> str:
    """A message with `code` spans (advisor's own messages): spans stay code, the rest is escaped."""
    line = one_line(text)
    out: list[str] = []
    at = 0
    for m in _CODE_PAIR.finditer(line):
        out.append(md_text(line[at : m.start()], line_start=line_start and not at))
        out.append(md_code(m.group(1), table=table))
        at = m.end()
    out.append(md_text(line[at:], line_start=line_start and not at))
    return "".join(out)


def cell(text: object) -> str:
    """Text safe inside a markdown table cell: :func:`md_message` with pipes escaped."""
    return md_message(text, table=True)


def html_text(text: object) -> str:
    """Input-derived text inside HTML (``<summary>``): one line, ``& < > "`` escaped."""
    import html

    return html.escape(_inert(text), quote=True)


def safe_name(text: str, limit: int = 30) -> str:
    """A resource name valid for GCE, GKE, Kubernetes (DNS-1035) and buckets: lower-case letters,
    digits and hyphens, starting with a letter, at most ``limit`` characters."""
    slug = re.sub(r"-{2,}", "-", re.sub(r"[^a-z0-9-]+", "-", text.lower())).strip("-")
    if not slug or not slug[0].isalpha():
        slug = "w-" + slug
    return slug[:limit].rstrip("-") or "workload"


# What a serving estimate's rate counts where its requests generate tokens (Estimate.throughput_unit); otherwise the
# requests themselves (requests/s, images/s, videos/s)
GENERATED_TOKENS = "generated tokens/s"


def unit_usd(usd: float | None, digits: int = 3, missing: str = "-") -> str:
    """A per-unit cost: fixed decimals from $0.1, three significant digits below (never '$0.000')."""
    if usd is None:
        return missing
    return f"${usd:,.{digits}f}" if usd >= 0.1 or usd == 0 else f"${usd:.{digits}g}"


def unit_label(unit_cost: dict[str, Any] | None, long: bool = False) -> str:
    """The unit a serving cost is quoted in: tokens for text generation, else the workload's own
    (per audio hour, per 1,000 images, per million requests)."""
    unit = str((unit_cost or {}).get("unit") or "per million output tokens")
    if long:
        return unit.replace("per million output tokens", "per M output tokens")
    if unit == "per million output tokens":
        return "$/M tok"
    return "$ " + unit.replace("per ", "/").replace("million", "M")


def per_unit(unit_cost: dict[str, Any] | None, digits: int = 3) -> str:
    """'$0.544 per M output tokens', '$0.00134 per audio hour'; 'unpriced' without a price."""
    usd = (unit_cost or {}).get("usd")
    if usd is None:
        return "unpriced"
    return f"{unit_usd(usd, digits)} {unit_label(unit_cost, long=True)}"


def request_asks(q: dict[str, Any], times: str = "x") -> str:
    """What a request read from a file asks for: the accelerator (or the name read) x chips per replica x replicas,
    ``?`` for a figure the file does not settle (a count behind a variable, a chart not rendered)."""

    def n(v: Any) -> str:
        return "?" if v is None else str(v)

    return f"{q.get('accelerator') or q.get('hardware')} {times} {n(q.get('count'))} {times} {n(q.get('replicas'))}"


def load_phrase(inference: Any) -> str:
    """The load a service was sized for, as the outputs say it: an offline job's volume and window, else its peak rate."""
    if inference is None:
        return "no load"
    if inference.mode == "batch" and inference.requests_per_day:
        return f"{inference.requests_per_day:,.0f} requests a day within {inference.run_hours_per_day:g} h"
    return f"{inference.peak_qps:g} requests/s at peak"
