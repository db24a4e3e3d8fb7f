"""Browser-test fixtures shared by the modules under tests/e2e: one stack a session (tests/e2e/browser.py)."""

from tests.e2e.browser import browser, live_site, page  # noqa: F401 - registers the fixtures
