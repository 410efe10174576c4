"""``advisor rules list|show|test``: both kinds of rules, clearly named.

Heuristics are the knowledge base that scores devices for ``advisor recommend``
(``rules/heuristics/``, with a test runner for every rule's own examples, built-in or a user's
directory); check rules are the registered rules of the CI gate ``advisor check``. Heavy modules
are imported inside the commands, so registering them costs ``advisor recommend`` nothing.
"""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

import typer

from advisor.commands.authoring import Format, _quiet, _usage

if TYPE_CHECKING:
    from advisor.knowledge import KnowledgeBase, Rule


rules_app = typer.Typer(
    name="rules",
    help="The knowledge base: list, show and test rules.",
    no_args_is_help=True,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
    add_completion=False,
)

RulesDirs = Annotated[
    list[Path] | None,
    typer.Option("--rules", help="Extra rule directory (repeatable), loaded with the built-in rules."),
]
FormatOpt = Annotated[Format, typer.Option("--format", "-f", help="Output format.")]


def _kb(rules: list[Path] | None) -> KnowledgeBase:
    from advisor.knowledge import load_knowledge

    return load_knowledge([str(r) for r in rules or []])


def _emit_json(data: Any) -> None:
    from advisor.renderers.json import dumps

    sys.stdout.write(dumps(data))
    sys.stdout.flush()


RuleKind = Literal["heuristics", "check", "all"]
KindOpt = Annotated[
    RuleKind,
    typer.Option(
        "--kind",
        "-k",
        help="heuristics: the knowledge base that scores devices (advisor recommend); check: the "
        "check rules of the CI gate (advisor check); all: both.",
    ),
]


@rules_app.command("list")
def rules_list(fmt: FormatOpt = "text", rules: RulesDirs = None, kind: KindOpt = "heuristics") -> None:
    """Rules of either kind: heuristics (id, category, effect, title, sources) and check rules
    (id, severity, scope, title). JSON: a list for one kind; {"heuristics", "check_rules"} for all."""
    from advisor.api import check_rules
    from advisor.docgen import rule_json

    heuristics = sorted(_kb(rules).rules, key=lambda r: r.id) if kind != "check" else []
    checks = check_rules() if kind != "heuristics" else []
    if fmt == "json":
        if kind == "all":
            _emit_json({"heuristics": [rule_json(r) for r in heuristics], "check_rules": checks})
        else:
            _emit_json([rule_json(r) for r in heuristics] if kind == "heuristics" else checks)
        return
    from rich.text import Text

    from advisor.commands.session import _console
    from advisor.renderers.text import print_table

    console = _console()
    if kind != "check":
        print_table(console, _heuristics_table(heuristics))
    if kind == "all":
        console.print()
    if kind != "heuristics":
        print_table(console, _check_rules_table(checks))
    if not _quiet():
        hint = "The full text and examples of one heuristic: advisor rules show ID"
        if kind == "heuristics":
            hint += "; the check rules of advisor check: advisor rules list --kind check"
        console.print(Text(hint, style="dim"))


def _heuristics_table(ordered: list[Rule]) -> Any:
    from rich import box
    from rich.table import Table
    from rich.text import Text

    table = Table(box=box.SIMPLE_HEAD, title=f"{len(ordered)} heuristics (advisor recommend)", title_justify="left")
    for col in ("id", "category", "effect"):
        table.add_column(col, no_wrap=True)
    table.add_column("title and sources", overflow="fold")
    for r in ordered:
        about = Text(r.title)
        for source in r.sources:
            about.append("\n" + source, style="dim")
        table.add_row(Text(r.id), Text(r.category), Text(r.effect_text), about)
    return table


def _check_rules_table(checks: list[dict[str, Any]]) -> Any:
    from rich import box
    from rich.table import Table
    from rich.text import Text

    table = Table(box=box.SIMPLE_HEAD, title=f"{len(checks)} check rules (advisor check)", title_justify="left")
    for col in ("id", "severity", "scope"):
        table.add_column(col, no_wrap=True)
    table.add_column("title", overflow="fold")
    for c in checks:
        table.add_row(Text(c["id"]), Text(c["severity"]), Text(c["scope"]), Text(c["title"]))
    return table


def _find_rule(kb: KnowledgeBase, rule_id: str) -> Rule:
    from advisor.validation import did_you_mean

    rule = kb.rule(rule_id)
    if rule is None:
        from advisor.api import check_rule_ids

        names = [n for r in kb.rules for n in (r.id, *r.aliases)] + check_rule_ids()
        raise _usage(f"unknown rule {rule_id!r}{did_you_mean(rule_id, names)} (advisor rules list shows them all)")
    return rule


def _block(title: str, text: str, out: list[str]) -> None:
    out.append(f"{title}:")
    out.extend(textwrap.wrap(text, 98, initial_indent="  ", subsequent_indent="  ") or ["  -"])
    out.append("")


@rules_app.command("show")
def rules_show(
    rule_id: Annotated[str, typer.Argument(metavar="ID", help="Rule id (or a former id).", show_default=False)],
    fmt: FormatOpt = "text",
    rules: RulesDirs = None,
) -> None:
    """One rule in full: a heuristic's condition, effect, reason, fix, sources and examples, or a
    check rule's severity, scope, docs and where it is checked."""
    from advisor.api import check_rules
    from advisor.docgen import condition_json, condition_lines, flow, rule_file, rule_json

    kb = _kb(rules)
    check_rule = next((c for c in check_rules() if c["id"] == rule_id), None)
    if check_rule is not None and kb.rule(rule_id) is None:
        _show_check_rule(check_rule, fmt)
        return
    rule = _find_rule(kb, rule_id)
    where = f"{rule_file(rule)}:{rule.line}"
    if fmt == "json":
        _emit_json(
            {
                **rule_json(rule),
                "when": condition_json(rule.when),
                "reason": rule.reason,
                "fix": rule.fix,
                "aliases": list(rule.aliases),
                "examples": {"fires": list(rule.fires), "not_fires": list(rule.not_fires)},
                "file": where,
            }
        )
        return
    out = [f"{rule.id}: {rule.title}", f"  file:     {where}", f"  category: {rule.category}", f"  effect:   {rule.effect_text}"]
    if rule.aliases:
        out.append(f"  aliases:  {', '.join(rule.aliases)}")
    out += ["", "when:", *condition_lines(rule.when, 1), ""]
    _block("reason", rule.reason, out)
    if rule.fix:
        _block("fix", rule.fix, out)
    out += ["sources:", *(f"  {s}" for s in rule.sources), ""]
    out.append("examples (deep-merged over a minimal profile; advisor rules test runs them):")
    for label, cases in (("fires", rule.fires), ("does not fire", rule.not_fires)):
        out.append(f"  {label}:")
        out += [f"    [{i}] {flow(case)}" for i, case in enumerate(cases)]
    sys.stdout.write("\n".join(out) + "\n")
    sys.stdout.flush()


def _show_check_rule(rule: dict[str, Any], fmt: str) -> None:
    if fmt == "json":
        _emit_json({**rule, "kind": "check"})
        return
    out = [f"{rule['id']}: {rule['title']}", "  kind:     check rule (advisor check)", f"  severity: {rule['severity']}",
           f"  scope:    {rule['scope']}", f"  checked:  {rule['checked_in']}", ""]
    _block("help", rule["help"], out)
    sys.stdout.write("\n".join(out[:-1]) + "\n")
    sys.stdout.flush()


@rules_app.command("test")
def rules_test(
    dirs: Annotated[
        list[Path] | None,
        typer.Argument(metavar="[DIR]...", help="User rule directories; the built-in rules when none.", show_default=False),
    ] = None,
    fmt: FormatOpt = "text",
) -> None:
    """Run every rule's fires/not_fires examples, like a test runner (exit 1 on a failure)."""
    from advisor.knowledge import load_knowledge
    from advisor.ruletest import run_rule

    if dirs:
        kb = load_knowledge([str(d) for d in dirs], builtin=False)
        if not kb.rules:
            where = ", ".join(map(str, dirs))
            raise _usage(f"{where}: no rules to test (expected rule files *.yaml, or a heuristics/ folder of them)")
    else:
        kb = load_knowledge()
    by_id = {r.id: r for r in kb.rules}
    results = [case for rule in sorted(kb.rules, key=lambda r: r.id) for case in run_rule(rule)]
    failed = [c for c in results if not c.ok]
    passed = len(results) - len(failed)
    if fmt == "json":
        _emit_json(
            {
                "results": [
                    {"rule": c.rule, "case": f"{c.kind}[{c.index}]", "ok": c.ok, "detail": c.detail or None}
                    for c in results
                ],
                "passed": passed,
                "failed": len(failed),
            }
        )
    else:
        quiet = _quiet()
        lines = []
        for c in results:
            if c.ok and not quiet:
                lines.append(f"PASS {c.rule} {c.kind}[{c.index}]")
            elif not c.ok:
                lines.append(f"FAIL {c.rule} {c.kind}[{c.index}]: {c.detail}")
                lines.extend(_explain(by_id[c.rule], c.kind, c.index))
        rules_word = "rule" if len(kb.rules) == 1 else "rules"
        lines.append(f"{passed} passed, {len(failed)} failed ({len(kb.rules)} {rules_word})")
        sys.stdout.write("\n".join(lines) + "\n")
        sys.stdout.flush()
    if failed:
        raise typer.Exit(1)


def _explain(rule: Rule, kind: str, index: int) -> list[str]:
    """Indented lines under a FAIL: the example, where the rule is, and each leaf's value."""
    from pydantic import ValidationError

    from advisor.conditions import OPERATORS, leaves
    from advisor.docgen import flow, leaf_text, rule_file
    from advisor.facts import FieldReader
    from advisor.ruletest import example_profile

    example = (rule.fires if kind == "fires" else rule.not_fires)[index]
    out = [f"    example: {flow(example)}  ({rule_file(rule)}:{rule.line})"]
    try:
        reader = FieldReader(example_profile(example))
    except ValidationError:
        return out
    for leaf in leaves(rule.when):
        actual = reader.get(leaf.field)
        got = OPERATORS[leaf.op][2](actual, leaf.value)
        out.append(f"    {leaf_text(leaf.field, leaf.op, leaf.value)}: {flow(got)} ({leaf.field} = {flow(actual)})")
    return out
