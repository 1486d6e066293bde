"""Averages."""


def mean(values):
    """The arithmetic mean of ``values``.

    >>> mean([1, 2])
    1.5
    >>> mean([1, 2, 3, 4])
    2
    """
    return sum(values) / len(values)
