from textutil import shout, whisper


def test_shout():
    assert shout("hello") == "HELLO!"


def test_whisper():
    assert whisper("HELLO There") == "hello there..."
