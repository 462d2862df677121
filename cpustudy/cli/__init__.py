"""The ``cpustudy`` command line: ``main`` parses, one module per command in ``commands/`` calls one
library function and prints; ``args`` holds the arguments several commands share, ``output`` the
printing (rich consoles, table/csv/json, progress) and ``table`` the tables that fit a terminal.
Imports only argparse-level modules at import time, so ``--help`` is fast and never imports
TensorFlow, pandas or plotnine."""

from cpustudy.cli.main import build_parser, main

__all__ = ["build_parser", "main"]
