"""The CLI tests' runner on a new cluster file."""

from tests.cli.conftest import cli

__all__ = ["cli"]
