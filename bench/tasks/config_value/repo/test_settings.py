from settings import load_settings


def test_timeout():
    assert load_settings()["timeout_seconds"] == 30


def test_retries_unchanged():
    assert load_settings()["retries"] == 3
