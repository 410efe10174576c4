"""Renderers of one ``CheckReport``: markdown (PR comment), SARIF, JUnit, GitHub annotations.

Each is a pure function from the report to text; severities map through one
table per format.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from advisor import __version__
from advisor.fmt import cell, hours, html_text, log_text, md_code, md_message, md_text, money, no_controls, one_line, request_asks
from advisor.renderers.json import dumps

if TYPE_CHECKING:
    from advisor.check.results import CheckReport, Finding, ProposalResult

SARIF_LEVEL = {"error": "error", "warning": "warning", "note": "note"}
GITHUB_COMMAND = {"error": "error", "warning": "warning", "note": "notice"}
ICON = {"pass": "✅", "warning": "⚠️", "error": "❌", "skipped": "➖", "invalid": "⛔"}
INPUT_ERROR = "input-error"  # the rule id of a file that could not be judged
INFO_URI = "https://github.com/advisor-project/advisor"
_XML_ILLEGAL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


# --------------------------------------------------------------------------- markdown


def markdown(report: CheckReport, opts: Any = None) -> str:
    checked = [r for r in report.results if r.status != "skipped"]
    need = report.needs_changes()
    advised = any(r.chosen is not None for r in checked)
    lines = [_md_headline(report, checked, need), "", _md_totals(report.summary, advised)]
    if report.diff is not None:
        lines += _md_diff(report.diff)
    lines.append("")
    if not checked:
        lines.append("No proposals found.")
    else:
        lines += ["| | proposal | asks for | cost | recommended | cost | findings |", "|---|---|---|---:|---|---:|---|"]
        lines += [_md_row(r) for r in checked]
        details = [r for r in checked if r.status != "pass" or any(f.severity == "note" for f in r.findings)]
        for r in details if need else []:
            lines += ["", _details(r)]
    if report.invalid:
        lines += ["", f"{ICON['invalid']} Not checked (input errors, exit 2):", ""]
        lines += [f"- {md_code(f'{p.path}:{p.line}:{p.col}')}: {md_message(p.message, line_start=False)}" for p in report.problems]
    lines += _skipped_md(report)
    lines += ["", f"<sub>advisor {__version__} · catalog as of {report.catalog_as_of} · fail-on: {report.fail_on}"
              + (f" · policy: {md_code(report.policy_path)}" if report.policy_path else "") + "</sub>", ""]
    return "\n".join(lines)


def _md_headline(report: CheckReport, results: list[Any], need: int) -> str:
    """The comment's heading: how many proposals fail the gate (at its fail-on level), how many only have warnings to
    read, and how many files could not be checked. Review 27: '18 of 27 proposals need changes' headed a run with no
    error and exit 0."""
    checked = len(results)
    levels = {"error": ("error",), "warning": ("error", "warning")}.get(report.fail_on, ())
    failing = sum(1 for r in results if r.status in levels)
    plural = "s" if checked != 1 else ""
    if failing:
        head = f"### advisor: {failing} of {checked} proposal{plural} fail{'s' if failing == 1 else ''} the gate"
        if need > failing:
            head += f"; {need - failing} more with warnings"
    elif need:
        head = f"### advisor: no proposal fails the gate; {need} of {checked} ha{'s' if need == 1 else 've'} warnings to read"
    else:
        head = "### advisor: the proposal passes" if checked == 1 else f"### advisor: all {checked} proposals pass"
    if report.invalid:
        head += f"; {len(report.invalid)} file{'s' if len(report.invalid) != 1 else ''} could not be checked"
    return head


def _md_totals(s: dict[str, Any], advised: bool = True) -> str:
    """The findings by severity, the waived and skipped, and the proposed and recommended spend (none where no proposal
    has a recommendation: never zero dollars)."""
    counts = s["findings"]
    recommended = f"recommended {money(s['recommended_cost_usd'])}" if advised else "no recommendation (no workload linked)"
    return (
        f"{counts['error']} error(s), {counts['warning']} warning(s), {counts['note']} note(s)"
        + (f", {s['waived']} waived" if s["waived"] else "")
        + (f", {s['skipped']} profile(s) without a proposal skipped" if s["skipped"] else "")
        + f". Proposed spend {spend(s)}; {recommended}."
        + (f" {s['unpriced']} unpriced (not counted as $0)." if s.get("unpriced") else "")
    )


def _md_diff(d: dict[str, Any]) -> list[str]:
    """The diff against the baseline: its totals, a table of what moved, the removed results."""
    delta = d["cost_delta_usd"] or 0.0
    sign = "+" if delta >= 0 else "-"
    against = {"plan-prior-state": "the plan's prior state", "none": "nothing (no --baseline: every resource counts in full)"}.get(
        str(d.get("baseline")), "the baseline")
    once = d.get("one_off_delta_usd") or 0.0
    one_off = ""
    if d.get("one_off_before_usd") or d.get("one_off_after_usd"):
        one_off = (f"; one-off cost {money(d.get('one_off_before_usd'))} → {money(d.get('one_off_after_usd'))} "
                   f"({'+' if once >= 0 else '-'}{money(abs(once))})")
    lines = [
        "",
        f"Against {against}: {d['new_findings']} new finding(s), {d['fixed_findings']} fixed, monthly cost "
        f"{money(d.get('cost_before_usd'))} → {money(d.get('cost_after_usd'))} ({sign}{money(abs(delta))}){one_off}, chips "
        f"{d.get('chips_before', '-')} → {d.get('chips_after', '-')}.",
    ]
    moved = [c for c in d["changes"]
             if c.get("cost_delta_usd") or c.get("chips_before") != c.get("chips_after") or c.get("added") or c.get("what")]
    if moved:
        lines += ["", "| resource | what changed | chips before → after | cost before → after | change |", "|---|---|---|---|---:|"]
        lines += [_md_change_row(c) for c in moved]
    if d.get("removed_profiles"):
        lines.append("")
        lines.append("Removed: " + ", ".join(md_code(k) for k in d["removed_profiles"]))
    return lines


def _md_change_row(c: dict[str, Any]) -> str:
    """One changed result of the diff: what changed, chips and cost before → after."""
    dd = c.get("cost_delta_usd")
    unit = "/month" if c.get("cost_kind", "monthly") == "monthly" else " one-off"
    change = "unpriced" if dd is None else f"{'+' if dd >= 0 else '-'}{money(abs(dd))}{unit}"
    what = cell(", ".join(c.get("what") or []).replace(" -> ", " → ")) or "-"
    return (
        f"| {md_code(c['key'], table=True)}{' (new)' if c.get('added') else ''} | {what} | {c.get('chips_before')} → "
        f"{c.get('chips_after')} | {money(c.get('cost_before_usd'))} → {money(c.get('cost_after_usd'))} | {change} |"
    )


def _md_row(r: ProposalResult) -> str:
    """One proposal: what it asks for and costs, the recommendation and its cost, the findings."""
    p = r.proposal or {}
    asks = f"{p.get('accelerator')} × {p.get('count')}, {p.get('hours'):g} h"
    if r.request is not None and r.source is not None and r.source.get("kind") != "profile":
        q = r.request
        asks = (
            f"{request_asks(q, '×')} = {'?' if q.get('total_chips') is None else q.get('total_chips')} chips, {p.get('hours'):g} h"
        )
    b = r.chosen
    recd = (
        f"{r.recommended.device.upper() if r.recommended else ''} {b.accelerator} × {b.count}".strip()
        if b
        else (UNLINKED if r.unlinked else "none feasible")
    )
    found = ", ".join(f"`{f.rule}`" for f in r.findings if not f.waived and f.severity != "note") or "none"
    return (
        f"| {ICON[r.status]} | {md_code(r.label, table=True)} | {cell(asks)} | {cost_cell(r)} | {recd} | "
        f"{money(b.cost_usd) if b else '-'} | {found} |"
    )


UNLINKED = "no workload linked — link one with `match:` to get a recommendation"


def spend(s: dict[str, Any]) -> str:
    """Monthly and one-off spend, never added into one total."""
    monthly, once = s.get("proposed_monthly_usd") or 0.0, s.get("proposed_one_off_usd") or 0.0
    if once and monthly:
        return f"{money(monthly)}/month + {money(once)} one-off"
    return f"{money(once)} one-off" if once else f"{money(monthly)}/month"


def cost_cell(r: ProposalResult) -> str:
    """The cost, its kind (per month / one-off) and the assumptions it rests on."""
    if r.proposal_cost is None:
        return "unpriced"
    text = money(r.proposal_cost) + ("/month" if r.kind_of_cost == "monthly" else " one-off")
    if r.assumptions:
        text += "<br><sub>" + md_message("; ".join(r.assumptions), table=True, line_start=False) + "</sub>"
    return text


def _skipped_md(report: CheckReport) -> list[str]:
    if not report.skipped_files and not report.excluded:
        return []
    n = len(report.skipped_files)
    out = [
        "",
        f"<details><summary>{ICON['skipped']} {n} file{'s' if n != 1 else ''} skipped (not a kind advisor reads, or nothing to check)"
        + (f"; {report.excluded} excluded" if report.excluded else "")
        + "</summary>",
        "",
    ]
    out += [f"- {md_code(path)}: {md_message(why, line_start=False)}" for path, why in report.skipped_files]
    out += ["", "</details>"]
    return out


def _details(r: ProposalResult) -> str:
    p = r.proposal or {}
    e = r.proposal_estimate
    b = r.chosen
    cheap = r.best
    out = [f"<details><summary>{ICON[r.status]} <code>{html_text(r.label)}</code> — {html_text(r.name)}</summary>", ""]
    out.append("| | accelerator | count | time | cost |")
    out.append("|---|---|---:|---:|---:|")
    if e is not None:
        t = hours(e.hours) if e.mode == "training" else f"{p.get('hours'):g} h/month"
        out.append(f"| proposed | {p.get('accelerator')} | {p.get('count')} | {t} | {money(r.proposal_cost)} |")
    for label, x in (("recommended", b), ("cheapest feasible", cheap if cheap is not b else None)):
        if x is None or (label != "recommended" and b is not None and (x.accelerator, x.count) == (b.accelerator, b.count)):
            continue
        t = hours(x.hours) if x.mode == "training" else f"{x.hours:,.0f} h/month"
        out.append(f"| {label} | {x.accelerator} | {x.count} | {t} | {money(x.cost_usd)} |")
    if len(out) == 4:  # nothing estimated (an unknown accelerator, no workload linked): no table of header alone
        del out[1:]
    out.append("")
    for f in r.findings:
        mark = " (waived: " + md_text(str((f.waiver or {}).get("reason", "")), line_start=False) + ")" if f.waived else ""
        out.append(f"- **{f.severity}** {md_code(f.rule)} (line {f.line}): {md_message(f.message, line_start=False)}{mark}")
    if r.recommended and r.recommended.setup:
        out.append(
            f"- setup path for the recommendation: {md_code(r.recommended.setup.path.id)} — "
            f"{md_text(r.recommended.setup.path.title, line_start=False)}"
        )
    out += ["", "</details>"]
    return "\n".join(out)


# --------------------------------------------------------------------------- SARIF


def sarif(report: CheckReport, opts: Any = None) -> str:
    from advisor.check.rules import CHECK_RULES

    rule_ids = sorted(CHECK_RULES)
    rules = [
        _sarif_rule(rid, "".join(part.capitalize() for part in rid.split("-")), CHECK_RULES[rid].title, CHECK_RULES[rid].help,
                    SARIF_LEVEL[CHECK_RULES[rid].severity])
        for rid in rule_ids
    ]
    results: list[dict[str, Any]] = []
    if report.invalid:
        text = (
            "The file could not be read or validated as a workload profile, so its proposal was not judged. "
            "Fix the error at the location given."
        )
        rules.append(_sarif_rule(INPUT_ERROR, "InputError", "File could not be checked", text, "error"))
        results += [
            {
                "ruleId": INPUT_ERROR,
                "ruleIndex": len(rules) - 1,
                "level": "error",
                "message": {"text": p.message},
                "locations": [_sarif_location(p.path, p.line, p.col)],
            }
            for p in report.problems
        ]
    results += [_sarif_finding(r, f, rule_ids.index(f.rule)) for r in report.results for f in r.findings]
    run: dict[str, Any] = {
        "tool": {
            "driver": {
                "name": "advisor",
                "version": __version__,
                "semanticVersion": __version__,
                "informationUri": INFO_URI,
                "rules": rules,
            }
        },
        "results": results,
        "columnKind": "unicodeCodePoints",
    }
    if report.skipped_files:
        run["invocations"] = [{"executionSuccessful": True, "toolExecutionNotifications": [
            {"level": "note", "message": {"text": f"skipped: {why}"}, "descriptor": {"id": "skipped-file"},
             "locations": [{"physicalLocation": {"artifactLocation": {"uri": path.lstrip("./") or path}}}]}
            for path, why in report.skipped_files
        ]}]
    doc = {"$schema": "https://json.schemastore.org/sarif-2.1.0.json", "version": "2.1.0", "runs": [run]}
    return dumps(doc)


def _sarif_rule(rid: str, name: str, title: str, help_text: str, level: str) -> dict[str, Any]:
    """A ``reportingDescriptor`` of the tool's rules."""
    return {
        "id": rid,
        "name": name,
        "shortDescription": {"text": title},
        "fullDescription": {"text": help_text},
        "help": {"text": help_text, "markdown": f"**{title}**\n\n{help_text}"},
        "defaultConfiguration": {"level": level},
    }


def _sarif_location(path: str, line: int, col: int) -> dict[str, Any]:
    """A SARIF location: the file (relative, without a leading ``./``), line and column."""
    return {
        "physicalLocation": {
            "artifactLocation": {"uri": path.lstrip("./") or path},
            "region": {"startLine": line, "startColumn": col},
        }
    }


def _sarif_finding(r: ProposalResult, f: Finding, rule_index: int) -> dict[str, Any]:
    """A SARIF result of one finding: where it is (and the resource it is about) and its waiver."""
    res: dict[str, Any] = {
        "ruleId": f.rule,
        "ruleIndex": rule_index,
        "level": SARIF_LEVEL[f.severity],
        "message": {"text": f.message},
        "locations": [_sarif_location(r.path, f.line, f.col)],
    }
    address = (r.source or {}).get("address")
    if address:
        res["locations"][0]["logicalLocations"] = [{"fullyQualifiedName": address, "kind": "resource"}]
    if f.waived:
        res["suppressions"] = [{"kind": "external", "justification": str((f.waiver or {}).get("reason", ""))}]
    return res


# --------------------------------------------------------------------------- JUnit


def xml_text(text: object) -> str:
    """Text that XML 1.0 can carry: C0 controls other than tab, newline and carriage return, and
    the non-characters U+FFFE/U+FFFF and lone surrogates, become U+FFFD."""
    return _XML_ILLEGAL.sub("\ufffd", str(text))


def junit(report: CheckReport, opts: Any = None) -> str:
    """JUnit XML built with ElementTree (every attribute and text escaped by the library), from
    XML-1.0-legal characters only."""
    import xml.etree.ElementTree as ET

    s = report.summary
    failures = s["error"] + s["warning"]
    tests = len(report.results) + len(report.invalid) + len(report.skipped_files)
    errors, skipped = len(report.invalid), s["skipped"] + len(report.skipped_files)

    def el(parent: ET.Element | None, tag: str, text: str | None = None, **attrs: object) -> ET.Element:
        values = {k: xml_text(v) for k, v in attrs.items()}
        node = ET.Element(tag, values) if parent is None else ET.SubElement(parent, tag, values)
        if text is not None:
            node.text = xml_text(text)
        return node

    root = el(None, "testsuites", name="advisor check", tests=tests, failures=failures, errors=errors, skipped=skipped)
    suite = el(root, "testsuite", name="advisor check", tests=tests, failures=failures, skipped=skipped, errors=errors)
    for r in report.results:
        case = el(suite, "testcase", classname="advisor.check", name=r.label, file=r.path, line=r.line)
        if r.status == "skipped":
            el(case, "skipped", message="no proposal block")
        elif r.status in ("error", "warning"):
            active = [f for f in r.findings if not f.waived and f.severity != "note"]
            head = active[0]
            body = "\n".join(f"{f.severity} {f.rule} (line {f.line}): {f.message}" for f in active)
            el(case, "failure", body, message=one_line(head.message), type=head.rule)
        notes = [f for f in r.findings if f.severity == "note" or f.waived]
        if notes:
            el(case, "system-out", "\n".join(f"{'waived ' if f.waived else ''}{f.severity} {f.rule}: {f.message}" for f in notes))
    for bad in report.invalid:
        body = "\n".join(str(p) for p in bad.problems)
        case = el(
            suite, "testcase", classname="advisor.check", name=bad.path, file=bad.path, line=bad.problems[0].line if bad.problems else 1
        )
        el(case, "error", body, message=one_line(bad.problems[0].message) if bad.problems else "input error", type=INPUT_ERROR)
    for path, why in report.skipped_files:
        case = el(suite, "testcase", classname="advisor.check", name=path, file=path)
        el(case, "skipped", message=one_line(why))
    for case in suite:
        if not len(case):
            case.text = "\n    "  # an empty testcase keeps its closing tag on its own line
    ET.indent(root, space="  ")
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode", short_empty_elements=True) + "\n"


# --------------------------------------------------------------------------- GitHub workflow commands


def _gh_data(text: str) -> str:
    # no control character of the input (ESC's terminal colours, NUL, DEL, a vertical tab) reaches the runner's log
    return no_controls(text).replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _gh_prop(text: str) -> str:
    return _gh_data(text).replace(":", "%3A").replace(",", "%2C")


def github(report: CheckReport, opts: Any = None) -> str:
    lines = [
        f"::error file={_gh_prop(p.path)},line={p.line},col={p.col},title={_gh_prop('advisor ' + INPUT_ERROR)}::{_gh_data(p.message)}"
        for p in report.problems
    ]
    for r in report.results:
        for f in r.findings:
            if f.waived:
                continue
            cmd = GITHUB_COMMAND[f.severity]
            lines.append(
                f"::{cmd} file={_gh_prop(r.path)},line={f.line},col={f.col},title={_gh_prop('advisor ' + f.rule)}::{_gh_data(f.message)}"
            )
    # a plain log line, no command: nothing of a file's name or reason the runner would read as one ('::', '##[')
    lines += [f"advisor check: skipped {log_text(path)}: {log_text(why)}" for path, why in report.skipped_files]
    s = report.summary
    lines.append(
        f"advisor check: {s['proposals']} proposal(s), {s['error']} with errors, {s['warning']} with warnings, {s['passed']} passed, "
        f"{s['skipped']} skipped, {s['invalid']} invalid" + (f", {s['skipped_files']} file(s) skipped" if s["skipped_files"] else "")
    )
    return "\n".join(lines) + "\n"
