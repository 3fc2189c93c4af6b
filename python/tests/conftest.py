"""Shared paths and data of the Python tests: the repository's fixtures and small seeded toy sets."""

import pathlib

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures"


@pytest.fixture
def regression():
    """y = sin(3x) + noise on 48 points of [-1, 1], float32, targets [N, 1]."""
    rng = np.random.default_rng(0)
    x = np.linspace(-1, 1, 48, dtype=np.float32)[:, None]
    y = (np.sin(3 * x) + 0.1 * rng.standard_normal(x.shape)).astype(np.float32)
    return x, y


@pytest.fixture
def classification():
    """Three Gaussian blobs in the plane, 60 points, integer labels [N]."""
    rng = np.random.default_rng(1)
    centres = np.array([[-2.0, 0.0], [2.0, 0.0], [0.0, 2.5]])
    labels = np.repeat(np.arange(3), 20)
    x = (centres[labels] + 0.6 * rng.standard_normal((60, 2))).astype(np.float32)
    return x, labels
