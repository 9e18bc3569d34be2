"""PLAIN's network and its training: an MLP fitted by SGD to the propagated pseudo-labels.

The authors' ``DeepNet`` (``models.py``): two hidden layers with ReLU and a sigmoid output,
``x ↦ σ(W₃ relu(W₂ relu(W₁x + b₁) + b₂) + b₃)``, the hidden widths 64 and 64 of ``main.py``.
Its parameters carry the code's names (``net.0``, ``net.2``, ``fc.0``), so a state dict moves
between the two unchanged. Initialised as ``torch.nn.Linear`` initialises (weights
Kaiming-uniform with a = √5, biases uniform on ±1/√fan_in), from a ``torch.Generator``
seeded by the fit, never from PyTorch's global generator.

Training (the authors' ``run_model``): per epoch, the rows in a fresh random order, the label
propagation (:mod:`.propagation`) from the previous epoch's outputs, then one pass of
mini-batches (the last one shorter) minimising the binary cross-entropy between the outputs
and the pseudo-labels, by SGD with momentum and weight decay; after the pass, the outputs
on all training rows (in batches of the same size) feed the next epoch's propagation.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

LINEAR_INIT_SLOPE = math.sqrt(5.0)  # torch.nn.Linear.reset_parameters


def build_network(torch: Any, n_features: int, n_labels: int, hidden: int, seed: int) -> Any:
    """The MLP with ``hidden`` units in each of its two hidden layers, float32, initialised
    from a generator seeded with ``seed``."""
    nn = torch.nn
    generator = torch.Generator().manual_seed(int(seed))
    layers = [
        nn.utils.skip_init(nn.Linear, n_features, hidden),
        nn.utils.skip_init(nn.Linear, hidden, hidden),
        nn.utils.skip_init(nn.Linear, hidden, n_labels),
    ]
    with torch.no_grad():
        for layer in layers:
            nn.init.kaiming_uniform_(layer.weight, a=LINEAR_INIT_SLOPE, generator=generator)
            bound = 1.0 / math.sqrt(layer.in_features)
            nn.init.uniform_(layer.bias, -bound, bound, generator=generator)
    return nn.ModuleDict(
        {
            "net": nn.Sequential(layers[0], nn.ReLU(), layers[1], nn.ReLU()),
            "fc": nn.Sequential(layers[2]),
        }
    )


def forward(torch: Any, network: Any, X: Any) -> Any:
    """The network's outputs σ(fc(net(X)))."""
    return torch.sigmoid(network["fc"](network["net"](X)))


def outputs(torch: Any, network: Any, X: Any, batch_size: int) -> np.ndarray:
    """The outputs on every row of the float32 tensor X, in batches (the code's ``test``),
    as a float32 NumPy array."""
    parts = []
    with torch.no_grad():
        for start in range(0, X.shape[0], batch_size):
            parts.append(forward(torch, network, X[start : start + batch_size]).cpu().numpy())
    return np.concatenate(parts, axis=0)


@dataclass
class Training:
    """What a training run produced besides the network."""

    pseudo_labels: np.ndarray  # the last epoch's propagated labels (n x q float32)
    losses: list[float] = field(default_factory=list)  # mean batch loss of each epoch


def train(
    torch: Any,
    network: Any,
    X: Any,
    candidates: Any,
    propagate: Callable[[Any], np.ndarray],
    orders: np.ndarray,
    *,
    batch_size: int,
    lr: float,
    momentum: float,
    weight_decay: float,
) -> Training:
    """Train ``network`` in place for ``len(orders)`` epochs.

    Args:
        torch: the torch module (imported by the caller: PyTorch is optional).
        network: from :func:`build_network`, on the fit's device.
        X: n x d float32 tensor of the training features, on the device.
        candidates: n x q float32 tensor of the candidate labels, on the device.
        propagate: the previous epoch's outputs (an n x q float32 tensor) to pseudo-labels
            (n x q float32 NumPy array).
        orders: epochs x n, each row a permutation of the rows: the epoch's batch order.
        batch_size, lr, momentum, weight_decay: SGD's settings.
    """
    optimizer = torch.optim.SGD(
        network.parameters(), lr=lr, momentum=momentum, weight_decay=weight_decay
    )
    bce = torch.nn.functional.binary_cross_entropy
    device = candidates.device
    n = X.shape[0]
    predictions = candidates
    training = Training(pseudo_labels=np.empty((n, candidates.shape[1]), dtype=np.float32))
    for order in orders:
        training.pseudo_labels = propagate(predictions)
        targets = torch.from_numpy(training.pseudo_labels).to(device)
        network.train()
        total, batches = 0.0, 0
        for start in range(0, n, batch_size):
            index = torch.from_numpy(order[start : start + batch_size]).to(device)
            optimizer.zero_grad()
            loss = bce(forward(torch, network, X[index]), targets[index])
            loss.backward()
            optimizer.step()
            total += float(loss.detach())
            batches += 1
        training.losses.append(total / batches)
        predictions = torch.from_numpy(outputs(torch, network, X, batch_size)).to(device)
    return training
