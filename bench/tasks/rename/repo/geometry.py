"""Areas of shapes."""


def area_of(width, height):
    """The area of a width x height rectangle."""
    return width * height
