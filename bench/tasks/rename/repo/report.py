"""One line about a rectangle."""

from geometry import area_of


def describe(width, height):
    """A line naming the rectangle's area."""
    return f"area: {area_of(width, height)}"
