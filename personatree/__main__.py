"""``python -m personatree`` runs the CLI."""

from .cli import main

main()
