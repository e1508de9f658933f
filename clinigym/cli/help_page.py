"""The command line reference page (docs/reference/cli.md), written from the argparse parser
itself at every documentation build (docs/hooks/cli_reference.py), so it cannot go stale: every
command and subcommand with its usage, description, each argument's help and its examples.

argparse has no public way to walk a parser, so this reads its actions and formats them with
the parser's own help formatter (the same text as `--help`, at a fixed width)."""
from __future__ import annotations

import argparse
import html
import re

WIDTH = 100      # usage lines wrap here whatever the terminal is: the page is the same on every build
TITLE = "Command line reference"


def commands(parser: argparse.ArgumentParser) -> list[tuple[tuple[str, ...], argparse.ArgumentParser, list[str]]]:
    """Every parser under this one, depth first in registration order: (the words after the
    program's name, the parser, its aliases)."""
    found = []
    for action in parser._actions:
        if not isinstance(action, argparse._SubParsersAction):
            continue
        names: dict[int, list[str]] = {}
        for name, sub in action.choices.items():
            names.setdefault(id(sub), []).append(name)
        for name, sub in action.choices.items():
            if names[id(sub)][0] != name:
                continue          # an alias: listed with its command
            found.append(((name,), sub, names[id(sub)][1:]))
            found += [((name, *words), p, aliases) for words, p, aliases in commands(sub)]
    return found


def _summaries(parser: argparse.ArgumentParser) -> dict[str, str]:
    """Each subcommand's one-line help, by name."""
    return {a.dest: a.help or "" for action in parser._actions if isinstance(action, argparse._SubParsersAction)
            for a in action._choices_actions}


def _inline(text: str) -> str:
    """Help text as Markdown: `code` spans kept, everything else shown as typed."""
    parts = text.split("`")
    if len(parts) % 2 == 0:      # an unpaired backtick: no code spans
        parts = [text]
    out = []
    for i, part in enumerate(parts):
        if i % 2:
            out.append(f"`{part}`")
        else:
            out.append(re.sub(r"([\\*_\[\]#|])", r"\\\1", html.escape(re.sub(r"\s+", " ", part), quote=False)))
    return "".join(out)


def _text(text: str | None) -> list[str]:
    """A description or an epilog: a paragraph, or verbatim when it has line breaks (examples)."""
    if not text or not text.strip():
        return []
    if "\n" in text.strip():
        return ["```text", text.strip("\n"), "```", ""]
    return [_inline(text), ""]


def _formatter(parser: argparse.ArgumentParser) -> argparse.HelpFormatter:
    return parser.formatter_class(prog=parser.prog, width=WIDTH)


def _usage(parser: argparse.ArgumentParser) -> str:
    formatter = _formatter(parser)
    formatter.add_usage(parser.usage, parser._actions, parser._mutually_exclusive_groups, prefix="")
    return formatter.format_help().strip()


def _arguments(parser: argparse.ArgumentParser) -> list[str]:
    formatter = _formatter(parser)
    out = []
    for group in parser._action_groups:
        shown = [a for a in group._group_actions if a.help is not argparse.SUPPRESS
                 and not isinstance(a, argparse._HelpAction | argparse._SubParsersAction)]
        if not shown:
            continue
        out += [f"**{_inline(group.title or 'arguments').capitalize()}**", ""]
        out += _text(group.description)
        for action in shown:
            helped = formatter._expand_help(action) if action.help else ""
            invocation = f"- `{formatter._format_action_invocation(action)}`"
            out.append(f"{invocation}: {_inline(helped)}" if helped else invocation)
        out.append("")
    return out


def _section(words: tuple[str, ...], parser: argparse.ArgumentParser, aliases: list[str]) -> list[str]:
    anchor = "-".join(words) or "clinigym"
    out = [f"{'#' * max(2, len(words) + 1)} {parser.prog} {{#{anchor}}}", ""]
    if aliases:
        out += ["Also spelled: " + ", ".join(f"`{' '.join([*parser.prog.split()[:-1], a])}`" for a in aliases), ""]
    out += ["```text", _usage(parser), "```", ""]
    out += _text(parser.description)
    summaries = _summaries(parser)
    subs = [(w, p) for w, p, _ in commands(parser) if len(w) == 1]
    if subs:
        out += ["| command | what it does |", "| --- | --- |"]
        out += [f"| [{w[0]}](#{'-'.join((*words, *w))}) | {_inline(summaries.get(w[0], ''))} |" for w, _ in subs]
        out.append("")
    out += _arguments(parser)
    out += _text(parser.epilog)
    return out


def markdown(parser: argparse.ArgumentParser) -> str:
    """The whole page: the program, then every command and subcommand."""
    out = [f"# {TITLE}", "",
           f"Every command of `{parser.prog}` and what its `--help` says, generated from the program's own "
           "argument parser when this site is built.", ""]
    out += _section((), parser, [])
    for words, sub, aliases in commands(parser):
        out += _section(words, sub, aliases)
    return "\n".join(out).rstrip("\n") + "\n"
