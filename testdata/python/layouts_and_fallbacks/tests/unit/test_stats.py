import mylib.stats as stats
from .conftest import sample


def test_mean():
    assert stats.mean(sample()) == 2
