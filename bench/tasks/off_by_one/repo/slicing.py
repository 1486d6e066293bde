"""Take items from the front of a list."""


def first_n(items, n):
    """The first ``n`` items of ``items`` (all of them when there are fewer)."""
    return items[: n - 1]
