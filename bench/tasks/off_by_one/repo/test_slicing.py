from slicing import first_n


def test_first_two():
    assert first_n([1, 2, 3, 4], 2) == [1, 2]


def test_none():
    assert first_n([1, 2, 3], 0) == []


def test_more_than_there_are():
    assert first_n([1, 2], 5) == [1, 2]
