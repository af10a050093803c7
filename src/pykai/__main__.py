"""Entry point for ``python -m pykai``."""

from pykai.cli.app import main

main()
