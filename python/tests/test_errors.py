"""The errors a user meets, through Python: each is a `bdl.BdlError` (a ValueError) whose
message is the Rust facade's (crates/bdl/tests/errors.rs checks the same texts): bad data
named by argument for every method, bad predictive inputs, damaged posterior files named."""

import numpy as np
import pytest

import bdl

# One cheap spec of every method that fits a regression MLP.
SPECS = [
    {"method": "map", "config": {"epochs": 2}},
    {"method": "laplace", "config": {}},
    {"method": "laplace", "config": {"hessian": "diagonal"}},
    {"method": "variational", "config": {"method": {"kind": "vadam", "learning_rate": 0.01,
        "beta1": 0.9, "beta2": 0.999}, "prior_precision": 1, "init_precision": None,
        "epochs": 1, "batch_size": 2, "mc_samples": 1, "lr_decay": None, "seed": 0}},
    {"method": "swag", "config": {"snapshots": 2, "rank": 2}},
    {"method": "ensemble", "config": {"members": 2, "map": {"epochs": 1}}},
    {"method": "gibbs", "config": {"blocking": {"kind": "node"}, "proposal": {"common": 0.01},
        "prior_variance": 1, "batch": "exact", "sweeps": 3}},
    {"method": "sgmcmc", "config": {"dynamics": {"kind": "sgld"}, "step_size": 1e-4,
        "prior_precision": 1, "epochs": 1, "batch_size": 2}},
    {"method": "hmc", "config": {"step_size": 0.01, "leapfrog_steps": 2, "iterations": 3,
        "burn_in": 1, "prior_precision": 1}},
    {"method": "nuts", "config": {"step_size": 0.01, "iterations": 3, "burn_in": 1,
        "prior_precision": 1}},
]

X = np.array([[0.0, 1.0], [1.0, 2.0], [1.0, 1.0]], dtype=np.float32)
Y = np.array([[0.0], [1.0], [2.0]], dtype=np.float32)
CASES = [
    ("a NaN feature", np.array([[0, 1], [np.nan, 2], [1, 1]], np.float32), Y,
     "x: non-finite value NaN"),
    ("an infinite target", X, np.array([[0], [np.inf], [2]], np.float32),
     "y: non-finite value inf"),
    ("rows that differ", X, Y[:2], "x has 3 rows but y has 2"),
    ("no examples", np.zeros((0, 2), np.float32), np.zeros((0, 1), np.float32),
     "at least one example"),
    ("the wrong width", np.zeros((3, 3), np.float32), Y, "MLP input x"),
]


def net():
    return bdl.Network.mlp([2, 4, 1], activation="tanh")


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s["method"])
@pytest.mark.parametrize("what,x,y,expected", CASES, ids=[c[0] for c in CASES])
def test_every_fit_refuses_bad_data_naming_the_argument(spec, what, x, y, expected):
    with pytest.raises(bdl.BdlError) as error:
        bdl.fit(spec, net(), x, y, likelihood="gaussian")
    text = str(error.value)
    assert text.split(" failed")[0] in {"MAP", "full Laplace", "diagonal Laplace", "Vadam",
                                         "SWAG", "deep ensemble", "blocked Gibbs", "SGLD",
                                         "HMC", "NUTS"}, text
    assert expected in text, f"{what}: {text}"


def test_labels_outside_the_classes():
    classes = bdl.Network.mlp([2, 4, 3], activation="tanh")
    spec = {"method": "map", "config": {}}
    with pytest.raises(bdl.BdlError, match="label 5"):
        bdl.fit(spec, classes, X, np.array([0, 1, 5]), likelihood="categorical")
    # The bindings refuse what a cast would hide: negative and fractional labels.
    for bad in ([0, -1, 2], [0, 1.5, 2]):
        with pytest.raises(bdl.BdlError, match="is not a class index"):
            bdl.fit(spec, classes, X, np.array(bad), likelihood="categorical")


def test_bad_settings_are_named():
    with pytest.raises(bdl.BdlError, match="method: unknown variant `lapalce`"):
        bdl.fit({"method": "lapalce", "config": {}}, net(), X, Y, likelihood="gaussian")
    with pytest.raises(bdl.BdlError, match="likelihood: \"poisson\""):
        bdl.fit(SPECS[0], net(), X, Y, likelihood="poisson")
    with pytest.raises(bdl.BdlError, match="x: expected an array of numbers"):
        bdl.fit(SPECS[0], net(), "not numbers", Y, likelihood="gaussian")
    with pytest.raises(bdl.BdlError, match="activation"):
        bdl.Network.mlp([2, 3, 1], activation="swish")


def test_predictives_refuse_bad_inputs_and_damaged_files_are_named(tmp_path):
    post = bdl.fit({"method": "laplace", "config": {}}, net(), X, Y, likelihood="gaussian")
    for what, bad in [("a NaN input", np.array([[np.nan, 1.0]], np.float32)),
                      ("the wrong width", np.zeros((1, 5), np.float32))]:
        with pytest.raises(bdl.BdlError, match="MLP input x"):
            post.predict(bad)
    with pytest.raises(bdl.BdlError, match="samples"):
        post.predict(X, samples=0)
    with pytest.raises(bdl.BdlError, match="not for a Gaussian predictive"):
        post.predict(X).probs

    path = tmp_path / "laplace.safetensors"
    post.save(str(path))
    data = path.read_bytes()
    altered = bytearray(data)
    altered[-1] ^= 0x10
    path.write_bytes(bytes(altered))
    with pytest.raises(bdl.BdlError) as error:
        bdl.load(str(path))
    assert "laplace.safetensors" in str(error.value) and "altered" in str(error.value)
    path.write_bytes(data[:-7])
    with pytest.raises(bdl.BdlError, match="laplace.safetensors"):
        bdl.load(str(path))
    with pytest.raises(bdl.BdlError, match="missing.safetensors"):
        bdl.load(str(tmp_path / "missing.safetensors"))
    # Rows of another width than the loaded posterior's network.
    path.write_bytes(data)
    with pytest.raises(bdl.BdlError, match="MLP input x"):
        bdl.load(str(path)).predict(np.zeros((2, 3), np.float32))


def test_a_state_dict_of_another_shape_is_named(tmp_path):
    """A PyTorch state_dict for another architecture: refused naming the file and tensor."""
    from conftest import FIXTURES
    wrong = bdl.Network.mlp([8, 40, 1], activation="relu")
    with pytest.raises(bdl.BdlError, match="mlp_8-50-50-1.safetensors"):
        wrong.load_state_dict(str(FIXTURES / "torch_mlp" / "mlp_8-50-50-1.safetensors"))
