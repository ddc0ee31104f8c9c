"""`python -m trust` runs the `trust` command."""

from trust.cli import main

main()
