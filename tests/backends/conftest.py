"""Every test here starts from the backend flags' defaults and leaves them as it found them."""

import pytest

from remat.backends import cuda


@pytest.fixture(autouse=True)
def _restore_backend_flags():
    saved = dict(cuda._SETTINGS)
    yield
    cuda._SETTINGS.clear()
    cuda._SETTINGS.update(saved)
