"""The bindings against the Rust side: the command line (`bdl fit` / `bdl predict`, built by
cargo) and the Python module fit the same posterior from the same CSV file and seed, and predict
the same numbers bit for bit; a posterior the command line saved loads in Python to the same
predictive; the PyTorch `state_dict` fixture loads to PyTorch's outputs."""

import json
import os
import pathlib
import subprocess

import numpy as np
import pytest

import bdl
from conftest import FIXTURES, ROOT

TARGET = "residuary_resistance"
HIDDEN, EPOCHS, SEED, LR = 16, 30, 3, 0.01


@pytest.fixture(scope="module")
def cli():
    """The `bdl` binary, built by cargo if needed (`BDL_CLI` names one built elsewhere)."""
    if "BDL_CLI" in os.environ:
        return os.environ["BDL_CLI"]
    subprocess.run(["cargo", "build", "--quiet", "-p", "bdl-cli"], cwd=ROOT, check=True)
    target = pathlib.Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    return str(target / "debug" / "bdl")


@pytest.fixture(scope="module")
def yacht(tmp_path_factory):
    """The shipped yacht CSV split into 250 training and 58 test rows."""
    lines = (ROOT / "examples" / "yacht-csv" / "yacht.csv").read_text().splitlines()
    folder = tmp_path_factory.mktemp("yacht")
    train, test = folder / "train.csv", folder / "test.csv"
    train.write_text("\n".join(lines[:251]) + "\n")
    test.write_text("\n".join([lines[0]] + lines[251:]) + "\n")
    return train, test


SPECS = [
    {"method": "laplace", "config": {"subnetwork": {"rule": "last-layer", "candidates": "all"},
        "prior_grid": [0.1, 1, 10]}},
    {"method": "variational", "config": {"method": {"kind": "vogn", "learning_rate": 0.01,
        "beta": 0.01}, "prior_precision": 1, "init_precision": None,
        "epochs": 5, "batch_size": 32, "mc_samples": 1, "lr_decay": None, "seed": 0}},
    {"method": "swag", "config": {"snapshots": 5, "rank": 3}},
]


def python_fit(spec, train, test):
    """The command line's pipeline in Python: read, standardise, MAP of an MLP, then the method."""
    x, y, features = bdl.read_csv(str(train), TARGET)
    scale = bdl.Standardizer(x)
    net = bdl.Network.mlp([x.shape[1], HIDDEN, 1], activation="relu")
    theta0 = net.init(seed=SEED, dtype="float32")
    map_spec = {"method": "map", "config": {"learning_rate": LR, "epochs": EPOCHS,
                "batch_size": 32, "learn_sigma": True, "seed": SEED}}
    xs = scale.transform(x)
    map_ = bdl.fit(map_spec, net, xs, y, likelihood="gaussian", theta=theta0)
    post = bdl.fit(spec, net, xs, y, likelihood=map_.likelihood, theta=map_.sample(1)[0])
    x_test, _, test_features = bdl.read_csv(str(test), TARGET)
    assert test_features == features
    return post, scale.transform(x_test)


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s["method"])
def test_command_line_and_python_agree_bit_for_bit(spec, cli, yacht, tmp_path):
    train, test = yacht
    method = tmp_path / "method.json"
    method.write_text(json.dumps(spec))
    model = tmp_path / "model.safetensors"
    subprocess.run([cli, "fit", "--method", str(method), "--data", str(train), "--target", TARGET,
                    "--hidden", str(HIDDEN), "--epochs", str(EPOCHS), "--seed", str(SEED),
                    "--learning-rate", str(LR), "--out", str(model)],
                   check=True, capture_output=True)
    out = tmp_path / "predictions.csv"
    subprocess.run([cli, "predict", "--posterior", str(model), "--data", str(test),
                    "--out", str(out)], check=True, capture_output=True)
    rows = np.loadtxt(out, delimiter=",", skiprows=1, dtype=np.float64)

    post, x_test = python_fit(spec, train, test)
    pred = post.predict(x_test)
    assert np.array_equal(pred.mean[:, 0], rows[:, 0])
    assert np.array_equal(pred.variance[:, 0], rows[:, 1])
    # The command line's saved posterior, loaded here: the same predictive.
    loaded = bdl.load(str(model)).predict(x_test)
    assert np.array_equal(loaded.mean, pred.mean)
    assert np.array_equal(loaded.variance, pred.variance)


def test_pytorch_state_dict_gives_pytorchs_outputs():
    folder = FIXTURES / "torch_mlp"
    net = bdl.Network.mlp([8, 50, 50, 1], activation="relu")
    theta = net.load_state_dict(str(folder / "mlp_8-50-50-1.safetensors"))
    assert theta.dtype == np.float32 and theta.shape == (net.num_params,)
    io = bdl.read_safetensors(str(folder / "io.safetensors"))
    f = net.forward(theta, io["X"])
    # The fixture's tolerance: float32 summation order only.
    np.testing.assert_allclose(f, io["Y"], rtol=1e-5, atol=1e-5)
