"""The package version: one place, read by the build (pyproject) and by the recordings."""
__version__ = "0.1.0"
