"""Build hook: the wheel carries the built-in programs and scenarios.

The repository keeps them at its top level (`containers/`, `scenarios/`); the build copies
them into the package as `clinigym/_data/`, where `clinigym.spec.paths` finds them in an
installed package. An editable install reads them in place instead.
"""
import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

DATA = ("containers", "scenarios")


class BuildWithData(build_py):
    def run(self):
        super().run()
        if getattr(self, "editable_mode", False):
            return
        root = Path(__file__).resolve().parent
        target = Path(self.build_lib) / "clinigym" / "_data"
        for name in DATA:
            shutil.copytree(root / name, target / name, dirs_exist_ok=True,
                            ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))


setup(cmdclass={"build_py": BuildWithData})
