"""Fixtures for every test, and the suite's two tiers (tests/tiers.py)."""
import pytest


def pytest_collection_modifyitems(config, items):
    """Cases of the heavy parametrized tests outside the quick tier get the `extended` mark (tests/tiers.py)."""
    from tests.tiers import extended
    seen: dict = {}
    for item in items:
        if not hasattr(item, "callspec"):
            continue
        key = item.nodeid.split("[")[0]
        index = seen[key] = seen.get(key, -1) + 1
        if extended(item.nodeid, index):
            item.add_marker(pytest.mark.extended)


@pytest.fixture(autouse=True)
def _fresh_check_memos():
    """Each test starts with empty kernel-check and isl-read memos (passes/analysis): a test that patches a
    machine description or another global must not see, or leave behind, results memoized under other values."""
    from gir.passes.analysis import checks, isl_helpers
    checks.clear_memo()
    isl_helpers.clear_memo()
    yield
