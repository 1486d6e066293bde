"""``python -m robotlab.cli`` runs the ``robotlab`` command."""

from robotlab.cli.robotlab_cli import main

main()
