"""The ``pykai`` command line: kubectl muscle memory over the embedded cluster."""
