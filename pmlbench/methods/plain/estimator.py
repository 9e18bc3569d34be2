"""The PLAIN estimator (plugin ``plain``; Wang et al., IJCAI 2023): graphs, then epochs of
propagation and training."""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator
from sklearn.preprocessing import StandardScaler

from pmlbench.core.checks import check_feature_count, check_features, check_label_matrix
from pmlbench.core.parameters import Interval, ValidatedParameters
from pmlbench.core.torch_runtime import CPU, device_constraint, thread_budget, torch_session
from pmlbench.errors import NotApplicable
from pmlbench.methods._constraints import (
    BUDGET_NOTE,
    CAP,
    NON_NEGATIVE,
    POSITIVE,
    POSITIVE_INT,
    SEED,
    check_neighbours,
)
from pmlbench.methods.plain.graphs import instance_graph, label_graph
from pmlbench.methods.plain.network import build_network, outputs, train
from pmlbench.methods.plain.propagation import propagate

NAME = "PLAIN"
# n_train x labels² above which PLAIN declines (the suite's budget; see max_label_work)
MAX_LABEL_WORK = 15_000_000
MAX_FEATURES = 2500  # features above which PLAIN declines (the suite's budget)


class PLAIN(ValidatedParameters, BaseEstimator):
    """PLAIN (Wang et al., IJCAI 2023): an MLP trained on labels propagated, once per epoch,
    over a kNN graph of the instances and a co-occurrence graph of the labels, from the
    candidates and the network's own outputs. Needs PyTorch (``pip install "pmlbench[deep]"``).

    Args:
        k: neighbours of each instance in the instance graph (authors: 10).
        alpha: α, weight of the instance graph in the propagation (the code's ``gamma``,
            0.1), >= 0.
        beta: β, weight of the label graph (the code's ``zeta``, 0.01), >= 0.
        eta: η, weight of the candidate labels (the code's ``alpha``, 1), >= 0.
        gamma: γ, the propagation's step size (the code's ``eta``, 0.01), > 0.
        propagation_steps: T, the propagation's gradient steps per epoch (``maxiter``, 200).
        epochs: passes over the training data (30).
        batch_size: rows per mini-batch (32).
        lr, momentum, weight_decay: SGD's learning rate (0.01), momentum (0.9) and weight
            decay (5e-5).
        hidden: units in each of the network's two hidden layers (64).
        threshold: ``predict`` keeps labels whose output exceeds this (the code's 0.7).
        device: ``cpu`` or ``cuda`` (a GPU, when present: its numbers are the GPU's, not the
            CPU's, and the device is part of each unit's key).
        threads: PyTorch's intra-op threads (None: the job's thread budget). The default is 1:
            the thread count changes the last bits of PyTorch's results (measured), and a
            unit's numbers must not depend on how many jobs a launcher runs at once.
        max_features: the largest feature count PLAIN takes on; larger inputs are refused
            before any work with :class:`~pmlbench.errors.NotApplicable` (None: no cap). The
            default 2500 refuses the yeast GO sets (6,139 features: yeastcc took 60.5 times
            ML-kNN's tuned CPU time, its first layer dominating) and admits every other
            bundled dataset the label cap admits (up to medical's 1,449).
        max_label_work: the largest ``n_train x labels²`` (the label graph's product ZR̂, in
            each of ``propagation_steps x epochs`` steps) PLAIN takes on (None: no cap). The
            default 1.5·10⁷ is where a tuned unit's CPU time (four grid points) reaches
            about 60 times ML-kNN's floor of one second (extrapolated from bibtex, 9.4·10⁷:
            86 CPU s per fit); it
            admits every bundled dataset up to cal500 and yeastcc (7.7·10⁶) and refuses
            bibtex, corel5k, corel16k001, delicious and yeastbp (docs/methods/plain.md,
            "Cost").
        random_state: seeds the network's initial weights and the order of the rows in each
            epoch, an integer in [0, 2**32) or None (the runner gives each split's seed).
    """

    default_bipartition = {"rule": "method"}
    # α, the instance graph's weight: one decade each side of the code's 0.1 (one of the three
    # "main parameters" of main.py); each point is a full training (docs/methods/plain.md)
    default_tuning_grid = {"alpha": [0.001, 0.01, 0.1, 1.0]}
    machine_dependent = (
        "PyTorch's float32 training runs CPU kernels chosen by the machine (ATen's vector "
        "instructions, MKL's code path) and the thread count: the outputs differ in their "
        "last bits (about 6e-8 after 30 epochs, measured), which can flip near-tied ranks "
        "and thresholds; on a GPU (method.device=cuda) the numbers are the GPU's"
    )
    parameter_constraints = {
        "k": POSITIVE_INT,
        "alpha": NON_NEGATIVE,
        "beta": NON_NEGATIVE,
        "eta": NON_NEGATIVE,
        "gamma": POSITIVE,
        "propagation_steps": [Interval(int, 0, None)],
        "epochs": POSITIVE_INT,
        "batch_size": POSITIVE_INT,
        "lr": POSITIVE,
        "momentum": [Interval(float, 0, 1, closed="left")],
        "weight_decay": NON_NEGATIVE,
        "hidden": POSITIVE_INT,
        "threshold": [Interval(float)],
        "device": device_constraint(NAME),
        "threads": [None, Interval(int, 1, None)],
        "max_features": CAP,
        "max_label_work": CAP,
        "random_state": SEED,
    }

    def __init__(
        self,
        k: int = 10,
        alpha: float = 0.1,
        beta: float = 0.01,
        eta: float = 1.0,
        gamma: float = 0.01,
        propagation_steps: int = 200,
        epochs: int = 30,
        batch_size: int = 32,
        lr: float = 0.01,
        momentum: float = 0.9,
        weight_decay: float = 5e-5,
        hidden: int = 64,
        threshold: float = 0.7,
        device: str = CPU,
        threads: int | None = 1,
        max_features: int | None = MAX_FEATURES,
        max_label_work: int | None = MAX_LABEL_WORK,
        random_state: int | None = None,
    ):
        self.k = k
        self.alpha = alpha
        self.beta = beta
        self.eta = eta
        self.gamma = gamma
        self.propagation_steps = propagation_steps
        self.epochs = epochs
        self.batch_size = batch_size
        self.lr = lr
        self.momentum = momentum
        self.weight_decay = weight_decay
        self.hidden = hidden
        self.threshold = threshold
        self.device = device
        self.threads = threads
        self.max_features = max_features
        self.max_label_work = max_label_work
        self.random_state = random_state

    def _refuse_over_caps(self, n: int, d: int, q: int) -> None:
        if self.max_features is not None and d > self.max_features:
            raise NotApplicable(
                f"PLAIN on {d:,} features trains a first layer of {d:,} x {self.hidden} weights "
                f"on every row in each of {self.epochs} epochs, over "
                f"method.max_features={self.max_features} (set for the suite's budget, "
                f"{BUDGET_NOTE}); set method.max_features=null to run it anyway"
            )
        work = n * q * q
        if self.max_label_work is not None and work > self.max_label_work:
            raise NotApplicable(
                f"PLAIN on {n:,} training instances x {q:,}² labels multiplies its "
                f"{n:,} x {q:,} pseudo-labels by the {q:,} x {q:,} label graph "
                f"{self.propagation_steps} times per epoch for {self.epochs} epochs "
                f"({work:,} > method.max_label_work={self.max_label_work}, set for the "
                f"suite's budget, {BUDGET_NOTE}); set method.max_label_work=null to run it "
                "anyway"
            )

    def _seeds(self) -> tuple[int, np.random.Generator]:
        """The network's initial-weight seed and the generator of the epochs' row orders,
        two independent streams of ``random_state``."""
        weights, orders = np.random.SeedSequence(self.random_state).spawn(2)
        return int(weights.generate_state(1)[0]), np.random.default_rng(orders)

    def fit(self, X, Y) -> PLAIN:
        """Standardise the features (training rows' mean and deviation), build the graphs,
        then train: ``epochs`` x (propagation, one pass of mini-batches)."""
        start = time.perf_counter()
        self._validate_params()
        X = check_features(X)
        Y = check_label_matrix(Y, what="candidate labels", n_rows=X.shape[0])
        n, d = X.shape
        q = Y.shape[1]
        self._refuse_over_caps(n, d, q)
        check_neighbours(int(self.k), n)
        device, threads = str(self.device), thread_budget(self.threads)
        with torch_session(device, threads, NAME) as torch:
            dense = np.asarray(X.toarray() if sp.issparse(X) else X, dtype=np.float64)
            self.scaler_ = StandardScaler().fit(dense)
            features = self.scaler_.transform(dense)
            graph = instance_graph(features, int(self.k))
            correlation = torch.from_numpy(label_graph(Y)).to(device)
            candidates = torch.from_numpy(Y.astype(np.float32)).to(device)
            X_train = torch.from_numpy(features.astype(np.float32)).to(device)
            weight_seed, order_rng = self._seeds()
            network = build_network(torch, d, q, int(self.hidden), weight_seed).to(device)
            orders = np.stack([order_rng.permutation(n) for _ in range(int(self.epochs))])

            def pseudo_labels(predictions: Any) -> np.ndarray:
                return propagate(
                    torch,
                    graph.normalized,
                    correlation,
                    candidates,
                    predictions,
                    alpha=float(self.alpha),
                    beta=float(self.beta),
                    eta=float(self.eta),
                    step=float(self.gamma),
                    iterations=int(self.propagation_steps),
                )

            training = train(
                torch,
                network,
                X_train,
                candidates,
                pseudo_labels,
                orders,
                batch_size=int(self.batch_size),
                lr=float(self.lr),
                momentum=float(self.momentum),
                weight_decay=float(self.weight_decay),
            )
            self.network_ = network.eval()
            version = str(torch.__version__)
        self.n_features_in_ = d
        self.graph_ = graph
        self.pseudo_labels_ = training.pseudo_labels
        self.disambiguation_scores_ = training.pseudo_labels.astype(np.float64)
        self.diagnostics_ = {
            "device": device,
            "threads": threads,
            "torch": version,
            "epochs": int(self.epochs),
            "loss_first_epoch": float(f"{training.losses[0]:.6g}"),
            "loss_last_epoch": float(f"{training.losses[-1]:.6g}"),
            "clipped_similarities": graph.clipped,
            "isolated_instances": graph.isolated,
            "fit_seconds": round(time.perf_counter() - start, 3),
        }
        return self

    def network_outputs(self, X) -> np.ndarray:
        """The network's outputs σ(·) on the rows of X (float32), in batches of
        ``batch_size``."""
        X = check_features(X)
        check_feature_count(X, self.n_features_in_, method=NAME)
        dense = np.asarray(X.toarray() if sp.issparse(X) else X, dtype=np.float64)
        features = self.scaler_.transform(dense).astype(np.float32)
        device = str(self.device)
        with torch_session(device, thread_budget(self.threads), NAME) as torch:
            tensor = torch.from_numpy(features).to(device)
            return outputs(torch, self.network_, tensor, int(self.batch_size))

    def decision_function(self, X) -> np.ndarray:
        """The network's outputs in (0, 1), n x q (float64)."""
        return self.network_outputs(X).astype(np.float64)

    def predict(self, X) -> np.ndarray:
        """Labels whose output exceeds ``threshold`` (the code's 0.7)."""
        return (self.network_outputs(X) > self.threshold).astype(np.uint8)
