"""PML-DDA's second stage: an MLP trained on the disambiguated labels (PyTorch).

The authors' ``deep_classifier`` (``model.py``, ``train.py``, ``config.py``): the inputs are
the embedded training features ``(UᵀX)ᵀ`` and the targets the disambiguated labels ``Pᵀ`` of
the first stage (:mod:`.decomposition`), both rounded to float32.

**Network** (``MultiLabelClassifier``): ``x ↦ σ(W₃ tanh(W₂ tanh(W₁x + b₁) + b₂) + b₃)``,
hidden widths 64 and 32 (``HIDDEN_DIMS``), weights Xavier-uniform and biases 0; here drawn
from a ``torch.Generator`` seeded by the fit, never from PyTorch's global generator. Its
parameters carry the code's names (``net.0``, ``net.2``, ``net.4``), so a state dict moves
between the two unchanged.

**Loss** (``NoisyBCELoss``), with the outputs ŷ clamped to [10⁻⁷, 1 − 10⁻⁷] and C the 0/1
candidates::

    ℓ = −mean( P ∘ log ŷ + (1 − C) ∘ log(1 − ŷ) )

over the batch's entries: the disambiguated labels pull every output up by their confidence,
and only the non-candidates push outputs down (a candidate is never a negative).

**Training** (``train_one_fold``): Adam (learning rate 10⁻³, L2 weight decay 10⁻⁵ added to
the gradient), the learning rate annealed by a cosine from 10⁻³ to 10⁻⁷ over the epochs
(``CosineAnnealingLR``, stepped once per epoch; the code's period ``T_MAX`` equals its
``EPOCHS``, 400); each epoch one pass over the rows in a fresh random order in mini-batches of
64 (the last one shorter). The epoch's loss is the batch losses weighted by batch size over
the rows; training stops when it has not fallen by more than ``min_delta`` (10⁻⁴) below the
best so far for ``patience`` (20) epochs, and the network of the best epoch is the result.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pmlbench.errors import PmlbenchError

CLAMP = 1e-7  # NoisyBCELoss's eps: outputs clamped to [CLAMP, 1 - CLAMP]


def build_network(
    torch: Any, n_inputs: int, hidden: tuple[int, ...], n_labels: int, seed: int
) -> Any:
    """The MLP (``Linear → Tanh`` per hidden width, then ``Linear → Sigmoid``), float32,
    weights Xavier-uniform from a generator seeded with ``seed``, biases 0."""
    nn = torch.nn
    generator = torch.Generator().manual_seed(int(seed))
    layers: list[Any] = []
    widths = [n_inputs, *hidden, n_labels]
    with torch.no_grad():
        for index, (fan_in, fan_out) in enumerate(zip(widths[:-1], widths[1:], strict=True)):
            linear = nn.utils.skip_init(nn.Linear, fan_in, fan_out)
            nn.init.xavier_uniform_(linear.weight, generator=generator)
            nn.init.zeros_(linear.bias)
            last = index == len(widths) - 2
            layers += [linear, nn.Sigmoid() if last else nn.Tanh()]
    return nn.ModuleDict({"net": nn.Sequential(*layers)})


def forward(network: Any, X: Any) -> Any:
    """The network's outputs σ(·) in (0, 1)."""
    return network["net"](X)


def candidate_bce(torch: Any, outputs: Any, targets: Any, candidates: Any) -> Any:
    """``−mean(P ∘ log ŷ + (1 − C) ∘ log(1 − ŷ))`` with ŷ clamped (``NoisyBCELoss``)."""
    clamped = outputs.clamp(CLAMP, 1.0 - CLAMP)
    positive = targets * torch.log(clamped)
    negative = (1.0 - candidates) * torch.log(1.0 - clamped)
    return -(positive + negative).mean()


def outputs(torch: Any, network: Any, X: Any, batch_size: int) -> np.ndarray:
    """The outputs on every row of the float32 tensor X, in batches (the code's
    ``evaluate``), as a float32 NumPy array."""
    parts = []
    with torch.no_grad():
        for start in range(0, X.shape[0], batch_size):
            parts.append(forward(network, X[start : start + batch_size]).cpu().numpy())
    if not parts:
        return np.zeros((0, network["net"][-2].out_features), dtype=np.float32)
    return np.concatenate(parts, axis=0)


@dataclass
class Training:
    """What a training run produced besides the network."""

    losses: list[float] = field(default_factory=list)  # each epoch's loss
    best_epoch: int = 0  # 1-based: the epoch whose network is kept
    best_loss: float = math.inf


def train(
    torch: Any,
    network: Any,
    X: Any,
    targets: Any,
    candidates: Any,
    orders: np.ndarray,
    *,
    batch_size: int,
    lr: float,
    lr_min: float,
    weight_decay: float,
    patience: int,
    min_delta: float,
) -> Training:
    """Train ``network`` in place for at most ``len(orders)`` epochs, then load the state of
    its best epoch.

    Args:
        torch: the torch module (imported by the caller: PyTorch is optional).
        network: from :func:`build_network`, on the fit's device.
        X: n x m float32 tensor of the embedded training features, on the device.
        targets: n x q float32 tensor of the disambiguated labels Pᵀ.
        candidates: n x q float32 tensor of the 0/1 candidates.
        orders: epochs x n, each row a permutation of the rows: the epoch's batch order.
        batch_size, lr, lr_min, weight_decay: the mini-batches, Adam's learning rate
            (annealed by a cosine to ``lr_min`` over ``len(orders)`` epochs) and L2 decay.
        patience, min_delta: early stopping on the epoch loss.
    """
    optimizer = torch.optim.Adam(network.parameters(), lr=lr, weight_decay=weight_decay)
    schedule = torch.optim.lr_scheduler.CosineAnnealingLR(
        optimizer, T_max=len(orders), eta_min=lr_min
    )
    device = X.device
    n = X.shape[0]
    training = Training()
    best_state = None
    stale = 0
    for epoch, order in enumerate(orders, start=1):
        network.train()
        total = 0.0
        for start in range(0, n, batch_size):
            rows = np.asarray(order[start : start + batch_size], dtype=np.int64)
            index = torch.from_numpy(rows).to(device)
            optimizer.zero_grad()
            loss = candidate_bce(
                torch, forward(network, X[index]), targets[index], candidates[index]
            )
            loss.backward()
            optimizer.step()
            total += float(loss.item()) * int(index.shape[0])
        schedule.step()
        epoch_loss = total / n
        training.losses.append(epoch_loss)
        if epoch_loss < training.best_loss - min_delta:
            training.best_loss, training.best_epoch = epoch_loss, epoch
            best_state = copy.deepcopy(network.state_dict())
            stale = 0
        else:
            stale += 1
            if stale >= patience:
                break
    if best_state is None:
        raise _not_finite(training.losses)
    network.load_state_dict(best_state)
    return training


def _not_finite(losses: list[float]) -> PmlbenchError:
    return PmlbenchError(
        f"pml_dda: the network's training loss is not finite (first epoch: {losses[0]!r}); "
        "the disambiguated labels or the embedded features overflowed: try other values of "
        "method.alpha, method.beta or method.gamma"
    )
