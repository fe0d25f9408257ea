"""`python -m cgraph` runs the command line."""

from cgraph.cli.app import main

main()
