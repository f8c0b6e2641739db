"""The `wincon` command line's parts (``wincon.cli`` is its entry point): the core commands, option names,
verbosity, and the exit codes with the errors that carry them.
"""
