"""Placeholder: this module is being written (see the issue that owns it)."""


def register_cli(sub) -> None:
    """No verbs yet."""
