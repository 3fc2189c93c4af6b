"""The Laplace posteriors through the bindings against laplace-torch: every pair in
`fixtures/laplace/` (a trained MLP, its data, and laplace-torch's subnetwork GGN Laplace under
the Wasserstein rule) and in `fixtures/kron/` (its KronLaplace over every parameter and over the
last layer) reproduced at the tolerances its sidecar states."""

import json

import numpy as np
import pytest

import bdl
from conftest import FIXTURES

CASES = sorted((FIXTURES / "laplace").glob("*.safetensors"))
KRON_CASES = sorted((FIXTURES / "kron").glob("*.safetensors"))


def check(meta, name, ours, expected):
    tol = meta["tolerances"][name]
    np.testing.assert_allclose(ours, expected, rtol=tol["rtol"], atol=tol["atol"], err_msg=name)


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.stem)
def test_laplace_torch_fixture(path):
    meta = json.loads(path.with_suffix(".json").read_text())
    tensors = bdl.read_safetensors(str(path))
    layers = meta["model"]["layers"]
    net = bdl.Network({
        "kind": "mlp",
        "widths": [layers[0]["in"]] + [layer["out"] for layer in layers],
        "activations": [layer["activation"] or "identity" for layer in layers],
    })
    regression = meta["likelihood"]["type"] == "regression"
    lam = meta["prior_precision"]
    likelihood = ({"kind": "gaussian", "sigma": meta["sigma_noise"]} if regression
                  else "categorical")
    s = meta["selection"]["s"]
    spec = {"method": "laplace", "config": {
        "prior": {"scalar": lam}, "subset_scaling": "none", "batch_size": 128,
        "subnetwork": {"rule": "wasserstein", "size": s, "candidates": "all",
                       "variances": {"diagonal-laplace": {"prior_precision": lam}}}}}
    post = bdl.fit(spec, net, tensors["X_train"], tensors["y_train"], likelihood=likelihood,
                   theta=tensors["theta_map"])
    assert len(post.diagnostics["subnetwork"]) == s
    x_eval = tensors["X_eval"]
    mean, cov = post.f_moments(x_eval)
    check(meta, "pred_mean", mean, tensors["pred_mean"])
    check(meta, "pred_f_cov", cov, tensors["pred_f_cov"])
    pred = post.predict(x_eval)
    if regression:
        sigma2 = meta["sigma_noise"] ** 2
        check(meta, "pred_f_cov", pred.variance - sigma2, tensors["pred_f_cov"][:, :, 0])
    else:
        check(meta, "probit_probs", pred.probs, tensors["probit_probs"])


def network(meta):
    """The fixture's network: its bdl spec (the CNN) or its MLP's layers."""
    if "network" in meta:
        return bdl.Network(meta["network"])
    layers = meta["model"]["layers"]
    return bdl.Network({
        "kind": "mlp",
        "widths": [layers[0]["in"]] + [layer["out"] for layer in layers],
        "activations": [layer["activation"] or "identity" for layer in layers],
    })


@pytest.mark.parametrize("scope", ["all", "last_layer"])
@pytest.mark.parametrize("path", KRON_CASES, ids=lambda p: p.stem)
def test_laplace_torch_kron_fixture(path, scope):
    meta = json.loads(path.with_suffix(".json").read_text())
    tensors = bdl.read_safetensors(str(path))
    regression = meta["likelihood"]["type"] == "regression"
    likelihood = ({"kind": "gaussian", "sigma": meta["sigma_noise"]} if regression
                  else "categorical")
    config = {"hessian": "kron", "prior": {"scalar": meta["prior_precision"]}}
    if scope == "last_layer":
        config["subnetwork"] = {"rule": "last-layer", "candidates": "all"}
    post = bdl.fit({"method": "laplace", "config": config}, network(meta),
                   tensors["X_train"], tensors["y_train"], likelihood=likelihood,
                   theta=tensors["theta_map"])
    mean, cov = post.f_moments(tensors["X_eval"])
    check(meta, f"{scope}.f_mean", mean, tensors[f"{scope}.f_mean"])
    check(meta, f"{scope}.f_cov", cov, tensors[f"{scope}.f_cov"])
    if not regression:
        check(meta, f"{scope}.probit_probs", post.predict(tensors["X_eval"]).probs,
              tensors[f"{scope}.probit_probs"])
