class UserError(Exception):
    """A problem with the user's input: printed as one line, exit code 2."""
