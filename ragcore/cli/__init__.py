"""The ``ragcore`` command line: ``main.py`` parses and dispatches, ``common.py`` holds what the subcommands share."""
