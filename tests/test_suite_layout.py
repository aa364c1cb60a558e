"""The test suite's own layout: one `conftest.py`. The test modules import helpers with
`from conftest import ...`; a second `conftest.py` in a subfolder is imported under the same
module name and, depending on collection order, shadows the first (the serial run then
fails to collect, a parallel one fails by chance)."""

from pathlib import Path


def test_there_is_one_conftest():
    tests = Path(__file__).parent
    found = sorted(str(p.relative_to(tests)) for p in tests.rglob("conftest.py"))
    assert found == ["conftest.py"]
