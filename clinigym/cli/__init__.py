"""The `clinigym` command line (`main`), one module per group of commands."""
from clinigym.cli.main import main

__all__ = ["main"]
