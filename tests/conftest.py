"""Fixtures for every test."""
import pytest


@pytest.fixture(autouse=True)
def _fresh_check_memos():
    """Each test starts with empty kernel-check and isl-read memos (passes/analysis): a test that patches a
    machine description or another global must not see, or leave behind, results memoized under other values."""
    from gir.passes.analysis import checks, isl_helpers
    checks.clear_memo()
    isl_helpers.clear_memo()
    yield
