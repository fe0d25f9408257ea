"""The runtime tests' driver: see `tests/drivers.py`."""

from tests.drivers import driver, pytest_generate_tests

__all__ = ["driver", "pytest_generate_tests"]
