"""A hypothesis strategy for any value a JSON or YAML document can hold: what a fuzz test puts
under the keys a reader of such a file looks at."""

from __future__ import annotations

from hypothesis import strategies as st

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner,
                                                                max_size=3),
    max_leaves=8)
"""Nulls, booleans, numbers, short texts, and lists and mappings of them, a few levels deep."""
