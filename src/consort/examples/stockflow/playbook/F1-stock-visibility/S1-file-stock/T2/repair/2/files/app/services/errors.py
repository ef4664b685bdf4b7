"""What the services refuse, in their own words; the routes turn them into HTTP answers."""


class AlreadyExists(ValueError):
    """The code is taken."""
