"""What every command shares: help with examples, warnings on stderr, old spellings that
still work for one release, flags that the chosen mode ignores, program names checked at
parsing. The conventions themselves are written down in `clinigym.cli.main`."""
from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from dataclasses import dataclass


class Formatter(argparse.HelpFormatter):
    """Wraps a description like argparse does; a text with line breaks (an `examples:`
    epilog) keeps them, so every example stays one command line."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        if "\n" not in text:
            return super()._fill_text(text, width, indent)
        return "".join(indent + line for line in text.splitlines(keepends=True))


class Parser(argparse.ArgumentParser):
    """The parser of the command and of every subcommand: the help formatter above."""

    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("formatter_class", Formatter)
        super().__init__(*args, **kwargs)


def examples(*lines: str) -> str:
    """An `examples:` epilog: each line a command (`clinigym ...`, parsed by the unit tests,
    so an example cannot go stale) or a comment (`# ...`) about the next command."""
    return "examples:\n" + "\n".join(f"  {line}" for line in lines) + "\n"


def warn(message: str) -> None:
    print(f"warning: {message}", file=sys.stderr)


class _Deprecated(argparse.Action):
    """An old spelling of an option: stores into the new one's destination, and warns."""

    def __init__(self, option_strings, dest, instead: str, **kwargs) -> None:
        super().__init__(option_strings, dest, **kwargs)
        self.instead = instead

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        warn(f"{option_string} is deprecated: use {self.instead} (the old spelling goes in the next release)")
        setattr(namespace, self.dest, values)


def add_deprecated(p: argparse.ArgumentParser, old: str, new: str, dest: str, **kwargs) -> None:
    """`old` as a hidden alias of the option `new` (same destination, type and nargs)."""
    p.add_argument(old, dest=dest, action=_Deprecated, instead=new, default=None, help=argparse.SUPPRESS,
                   **kwargs)


def program(name: str) -> str:
    """argparse type of a program name: one of the search path (read when the flag is given,
    after --path; the folder names only, nothing is loaded)."""
    from clinigym.core.errors import ClinigymError
    from clinigym.spec.paths import program_files
    try:
        known = sorted(program_files())
    except ClinigymError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    if name not in known:
        raise argparse.ArgumentTypeError(f"no such program {name!r} (choose from {', '.join(known)})")
    return name


def at_least_one(text: str) -> int:
    """argparse type of a count: argparse then exits with status 2 and `argument --FLAG: at least 1`."""
    return _count(text, 1)


def at_least_zero(text: str) -> int:
    """argparse type of a count that may be 0."""
    return _count(text, 0)


def _count(text: str, minimum: int) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"a whole number, not {text!r}") from None
    if value < minimum:
        raise argparse.ArgumentTypeError(f"at least {minimum}")
    return value


def plain_dest(flag: str) -> str:
    """argparse's destination of a flag: `--single-step` -> `single_step`."""
    return flag.lstrip("-").replace("-", "_")


@dataclass(frozen=True)
class Ignored:
    """Flags that a command ignores in some case. `why` names the case (e.g. "in the steps
    mode") for the parsed arguments, or is None when the flags count. A flag counts as given
    when its value is not None: such flags default to None (see `filled`)."""
    flags: tuple[str, ...]
    why: Callable[[argparse.Namespace], str | None]
    dest: Callable[[str], str] = plain_dest     # where the parsed value of a flag is


def warn_ignored(args: argparse.Namespace, rules: tuple[Ignored, ...]) -> list[str]:
    """Warn once for each given flag that a rule ignores (the first such rule says why)."""
    messages: dict[str, str] = {}
    for rule in rules:
        why = rule.why(args)
        for flag in rule.flags:
            if why and flag not in messages and getattr(args, rule.dest(flag)) is not None:
                messages[flag] = f"{flag} is ignored {why}"
    for message in messages.values():
        warn(message)
    return list(messages.values())


def filled(args: argparse.Namespace, defaults: dict[str, object]) -> argparse.Namespace:
    """The arguments with the defaults of the flags left None (None marks "not given")."""
    return argparse.Namespace(**{**vars(args), **{k: v for k, v in defaults.items() if getattr(args, k) is None}})
