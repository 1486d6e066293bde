"""Small text helpers."""


def shout(text):
    """The text in upper case followed by "!"."""
    return text.upper() + "!"
