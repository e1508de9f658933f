"""clinigym: real clinical imaging programs as Gymnasium environments."""
from pathlib import Path

from clinigym._version import __version__
from clinigym.envs import register_envs

__all__ = ["__version__", "add_folder", "register_envs"]

register_envs()


def add_folder(folder: str | Path) -> None:
    """Add a folder of programs (`containers/<app>/app.yaml`) and scenarios
    (`scenarios/<app>/<id>.yaml`) to the search path, and register its environments."""
    from clinigym.spec.paths import add_folder as add
    add(folder)
    register_envs()
