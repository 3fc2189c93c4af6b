"""Every method family through `bdl.fit` on numpy data: the predictive's shape and range, the
same numbers from the same seed, and a saved posterior that loads back to the same predictive
bit for bit."""

import numpy as np
import pytest

import bdl

REGRESSION_SPECS = [
    {"method": "laplace", "config": {}},
    {"method": "laplace", "config": {"hessian": "diagonal", "prior_grid": [0.1, 1, 10]}},
    {"method": "laplace", "config": {"subnetwork": {"rule": "last-layer", "candidates": "all"}}},
    {"method": "laplace", "config": {"hessian": "kron", "prior_grid": [0.1, 1, 10]}},
    {"method": "laplace", "config": {"subnetwork": {"rule": "wasserstein", "size": 20,
        "variances": {"diagonal-laplace": {"prior_precision": 1.0}}}}},
    {"method": "variational", "config": {"method": {"kind": "vogn", "learning_rate": 0.01,
        "beta": 0.01}, "prior_precision": 1, "init_precision": None,
        "epochs": 20, "batch_size": 16, "mc_samples": 1, "lr_decay": None, "seed": 0}},
    {"method": "swag", "config": {"snapshots": 10, "rank": 5}},
    {"method": "ensemble", "config": {"members": 3, "map": {"epochs": 40}}},
    {"method": "gibbs", "config": {"blocking": {"kind": "layer"}, "proposal": {"common": 1e-4},
        "prior_variance": 1, "batch": "exact", "sweeps": 30, "burn_in": 10}},
]


def fit_map(net, x, y, likelihood):
    spec = {"method": "map", "config": {"epochs": 200, "batch_size": 16, "learning_rate": 0.01}}
    return bdl.fit(spec, net, x, y, likelihood=likelihood, seed=0)


def same(a, b):
    return a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b)


@pytest.mark.parametrize("spec", REGRESSION_SPECS, ids=lambda s: s["method"])
def test_regression_methods(spec, regression, tmp_path):
    x, y = regression
    net = bdl.Network.mlp([1, 16, 1], activation="tanh")
    lik = {"kind": "gaussian", "sigma": 0.1}
    map_ = fit_map(net, x, y, lik)
    theta = map_.sample(1)[0]
    post = bdl.fit(spec, net, x, y, likelihood=lik, theta=theta)
    again = bdl.fit(spec, net, x, y, likelihood=lik, theta=theta)
    x_new = np.linspace(-2, 2, 9, dtype=np.float32)[:, None]
    pred = post.predict(x_new)
    assert not pred.is_classification
    assert pred.mean.shape == (9, 1) and pred.variance.shape == (9, 1)
    assert np.all(pred.variance > 0)
    assert np.isfinite(post.predict(x).log_likelihood(y))
    # The same seed, the same posterior.
    assert same(again.predict(x_new).variance, pred.variance)
    # Saved and loaded: the same predictive, bit for bit.
    path = tmp_path / "posterior.safetensors"
    post.save(str(path))
    back = bdl.load(str(path))
    assert back.method == post.method and back.diagnostics is None
    assert same(back.predict(x_new).mean, pred.mean)
    assert same(back.predict(x_new).variance, pred.variance)


def test_classification_methods(classification, tmp_path):
    x, labels = classification
    net = bdl.Network.mlp([2, 12, 3], activation="tanh")
    map_ = fit_map(net, x, labels, "categorical")
    assert map_.likelihood == {"kind": "categorical", "classes": 3}
    theta = map_.sample(1)[0]
    specs = [
        {"method": "laplace", "config": {"prior_grid": [0.1, 1, 10]}},
        {"method": "swag", "config": {"snapshots": 8, "rank": 4}},
        {"method": "gibbs", "config": {"blocking": {"kind": "node"}, "proposal": {"common": 1e-3},
            "prior_variance": 1, "batch": "exact", "sweeps": 20, "burn_in": 5}},
    ]
    for spec in specs:
        post = bdl.fit(spec, net, x, labels, likelihood=map_.likelihood, theta=theta)
        pred = post.predict(x)
        assert pred.is_classification
        assert pred.probs.shape == (60, 3)
        np.testing.assert_allclose(pred.probs.sum(axis=1), 1.0, atol=1e-9)
        assert pred.accuracy(labels) > 0.9, spec["method"]
        assert 0.0 <= pred.ece(labels) <= 1.0
        path = tmp_path / f"{spec['method']}.safetensors"
        post.save(str(path))
        assert same(bdl.load(str(path)).predict(x).probs, pred.probs)


def test_mc_dropout_and_function_draws(regression):
    x, y = regression
    net = bdl.Network.mlp([1, 32, 1], activation="relu", dropout=0.1)
    spec = {"method": "mc-dropout", "config": {"epochs": 50, "batch_size": 16}}
    post = bdl.fit(spec, net, x, y, likelihood={"kind": "gaussian", "sigma": 0.1})
    assert post.method == "MC dropout" and post.sample(2) is None
    draws = post.f_samples(x[:5], samples=7)
    assert draws.shape == (7, 5, 1)
    mean, cov = post.f_moments(x[:5], samples=7)
    np.testing.assert_allclose(mean, draws.mean(axis=0), rtol=1e-12, atol=1e-12)
    assert cov.shape == (5, 1, 1)


def test_laplace_function_moments_are_its_predictive(regression):
    """The linearized Laplace's f covariance plus σ² is its regression predictive variance."""
    x, y = regression
    net = bdl.Network.mlp([1, 16, 1], activation="tanh")
    lik = {"kind": "gaussian", "sigma": 0.1}
    theta = fit_map(net, x, y, lik).sample(1)[0]
    post = bdl.fit({"method": "laplace", "config": {}}, net, x, y, likelihood=lik, theta=theta)
    mean, cov = post.f_moments(x)
    pred = post.predict(x)
    np.testing.assert_allclose(mean, pred.mean, rtol=1e-12)
    np.testing.assert_allclose(cov[:, :, 0] + 0.1**2, pred.variance, rtol=1e-10)
    np.testing.assert_allclose(mean, net.forward(theta, x), rtol=1e-6, atol=1e-6)


def test_float64_parameters_keep_their_dtype(regression):
    x, y = regression
    net = bdl.Network.mlp([1, 8, 1], activation="tanh")
    theta = net.init(seed=2, dtype="float64")
    assert theta.dtype == np.float64 and theta.shape == (net.num_params,)
    post = bdl.fit({"method": "map", "config": {"epochs": 5}}, net, x, y,
                   likelihood="gaussian", theta=theta)
    assert post.sample(1).dtype == np.float64
    assert post.predict(x).mean.dtype == np.float64
