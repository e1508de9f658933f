"""MkDocs hook: the command line reference page (reference/cli.md), generated at every build
from clinigym's own argument parser (clinigym.cli.help_page), so it cannot go stale. The page
is not a file of the repository: a hand-written one in its place is an error."""
from __future__ import annotations

from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File

from clinigym.cli.help_page import markdown
from clinigym.cli.main import build_parser

PAGE = "reference/cli.md"


def on_files(files, config):
    if files.get_file_from_path(PAGE) is not None:
        raise PluginError(f"docs/{PAGE} is generated from the argument parser at build time: remove the file")
    files.append(File.generated(config, PAGE, content=markdown(build_parser())))
    return files
