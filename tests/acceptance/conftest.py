"""Fixtures the acceptance tests share."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.drivers import driver, pytest_generate_tests
from tests.studio import browser

__all__ = ["chromium", "driver", "pytest_generate_tests"]


@pytest.fixture(scope="module")
def chromium() -> Iterator[Any]:
    """One headless Chromium (the system's, under Playwright) for a test module; the test
    skips, saying why, where there is none."""
    with browser() as launched:
        yield launched
