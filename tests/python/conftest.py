import pytest

import accel


@pytest.fixture(scope="session")
def dev():
    with accel.Device("cpu") as d:
        yield d


@pytest.fixture
def stream(dev):
    with dev.stream(lazy=False) as s:
        yield s
