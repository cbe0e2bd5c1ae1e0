"""Exceptions shared across the library."""


class UserError(Exception):
    """An error caused by the user's input (bad file, bad value, missing data).

    ``clerk`` prints it as one line and exits with status 2, without a traceback.
    """
