"""The CLI runner fixture of tests/cli, for the Kueue tests."""

from tests.cli.conftest import cli

__all__ = ["cli"]
