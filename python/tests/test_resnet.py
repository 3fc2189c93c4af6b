"""A torchvision ResNet-18 state_dict (CIFAR stem) through `bdl.Network.from_state_dict`: the
logits PyTorch recorded in fixtures/resnet, and a Laplace posterior on a small ResNet."""

import importlib.util
import json
import struct

import numpy as np
import pytest

import bdl
from conftest import FIXTURES


def fixture_script():
    """The fixture's own generator of state_dict entries (numpy only)."""
    path = FIXTURES / "resnet" / "make_resnet_fixture.py"
    spec = importlib.util.spec_from_file_location("make_resnet_fixture", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def save_safetensors(path, tensors):
    """A safetensors file as PyTorch's `save_file` writes one (float64 and int64 tensors)."""
    header, blobs, offset = {}, [], 0
    for name, array in tensors.items():
        data = np.ascontiguousarray(array).tobytes()
        kind = "I64" if array.dtype == np.int64 else "F64"
        header[name] = {"dtype": kind, "shape": list(array.shape),
                        "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def state_dict(net, entry):
    """Parameters by the network's names, with each normalisation's running statistics."""
    tensors = {name: entry(name, tuple(shape)) for name, shape in net.parameters}
    for name, shape in net.parameters:
        if len(shape) == 1 and name.endswith(".weight"):
            norm = name[: -len(".weight")]
            for buffer in ("running_mean", "running_var"):
                tensors[f"{norm}.{buffer}"] = entry(f"{norm}.{buffer}", tuple(shape))
            tensors[f"{norm}.num_batches_tracked"] = np.zeros((), dtype=np.int64)
    return tensors


RESNET18 = {"kind": "resnet", "input": [3, 32, 32], "widths": [64, 128, 256, 512],
            "blocks": [2, 2, 2, 2], "classes": 10}


def test_resnet18_state_dict_gives_pytorchs_logits(tmp_path):
    script = fixture_script()
    recorded = json.loads((FIXTURES / "resnet" / "resnet18_cifar.json").read_text())
    path = tmp_path / "resnet18.safetensors"
    save_safetensors(path, state_dict(bdl.Network(RESNET18), script.tensor_for))
    net, theta = bdl.Network.from_state_dict(RESNET18, str(path))
    assert theta.dtype == np.float64 and theta.shape == (recorded["n_params"],)
    assert len(net.spec["statistics"]) == 20
    x = script.values("input", 4 * 3 * 32 * 32).reshape(4, 3, 32, 32)
    logits = np.array(recorded["logits"])
    # Both in float64: agreement to rounding (the Rust test's 1e-10 of the logits' scale).
    np.testing.assert_allclose(net.forward(theta, x), logits, rtol=0, atol=1e-10 * abs(logits).max())


def test_a_state_dict_without_running_statistics_names_the_missing_one(tmp_path):
    script = fixture_script()
    small = {"kind": "resnet", "input": [1, 6, 6], "widths": [2], "blocks": [1], "classes": 2}
    tensors = state_dict(bdl.Network(small), script.tensor_for)
    del tensors["layer1.0.bn1.running_mean"]
    path = tmp_path / "partial.safetensors"
    save_safetensors(path, tensors)
    with pytest.raises(bdl.BdlError, match="layer1.0.bn1.running_mean"):
        bdl.Network.from_state_dict(small, str(path))


def test_a_small_resnet_takes_a_laplace_posterior():
    rng = np.random.default_rng(0)
    net = bdl.Network({"kind": "resnet", "input": [1, 6, 6], "widths": [3, 4], "blocks": [1, 1],
                       "classes": 3})
    x = rng.standard_normal((24, 1, 6, 6)).astype(np.float32)
    y = np.arange(24) % 3
    laplace = {"method": "laplace", "config": {"hessian": "diagonal"}}
    post = bdl.fit(laplace, net, x, y, likelihood="categorical", theta=net.init(seed=0))
    probs = post.predict(x).probs
    assert probs.shape == (24, 3)
    np.testing.assert_allclose(probs.sum(axis=1), 1.0, rtol=1e-5)
