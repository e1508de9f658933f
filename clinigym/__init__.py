"""clinigym: real clinical imaging programs as Gymnasium environments."""
__version__ = "0.1.0"

from clinigym.envs import register_envs  # noqa: E402

register_envs()
