"""The PML-DDA estimator (plugin ``pml_dda``): features, decomposition, then the network."""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
from sklearn.base import BaseEstimator
from threadpoolctl import threadpool_limits

from pmlbench.core.checks import as_dense, check_feature_count, check_features, check_label_matrix
from pmlbench.core.parameters import Interval, ValidatedParameters
from pmlbench.core.torch_runtime import CPU, device_constraint, thread_budget, torch_session
from pmlbench.errors import NotApplicable, PmlbenchError
from pmlbench.methods._constraints import (
    BUDGET_NOTE,
    CAP,
    FLAG,
    NON_NEGATIVE,
    POSITIVE,
    POSITIVE_INT,
    SEED,
)
from pmlbench.methods.pml_dda.decomposition import Decomposition, decompose, embedding_size
from pmlbench.methods.pml_dda.network import build_network, outputs, train
from pmlbench.numerics.kernel_features import KernelMap, minmax_apply, minmax_fit, n_anchors

NAME = "PML-DDA"
# The caps (docs/methods/pml_dda.md, "Cost"). A fit's work grows with n x h (training rows x
# kernel features): the decomposition's products are n x n by n x h, the network's first
# layer has about 0.8·h inputs per row. MAX_WORK admits mirflickr5k (2,500 x 501: 42 times
# ML-kNN's tuned CPU time) and yeast (1,208 x 516: 45 times) and refuses slashdot, whose inner
# fits (1,512 x 1,513) already cost 145 times, and every bundled set of 2,311 or more kernel
# features. MAX_TRAIN bounds the n x n matrices (memory) whatever the features.
MAX_WORK = 1_500_000
MAX_TRAIN = 2500


@dataclass
class Draws:
    """The random parts of a fit, from ``random_state`` (three independent streams)."""

    anchors: np.ndarray | None  # the kernel's anchor rows (0-based), None without the kernel
    V: np.ndarray  # m x n, uniform on [0, 1): the start of V (``rand(k, n)``)
    prototypes: np.ndarray  # m x q, standard normal: the start of O (``randn(k, q)``)
    weight_seed: int  # the network's initial weights
    orders: np.ndarray  # epochs x n: the rows' order in each epoch


def draws(
    seed: int | None, n: int, d: int, q: int, *, ratio: float, kernel_map: bool, epochs: int
) -> Draws:
    """:class:`Draws` for a training set of n rows, d features and q labels."""
    decomposition, weights, orders = np.random.SeedSequence(seed).spawn(3)
    rng = np.random.default_rng(decomposition)
    anchors = rng.choice(n, size=n_anchors(n, d), replace=False) if kernel_map else None
    h = anchors.size + 1 if anchors is not None else d
    m = embedding_size(ratio, h)
    V, prototypes = rng.random((m, n)), rng.standard_normal((m, q))
    order_rng = np.random.default_rng(orders)
    return Draws(
        anchors=anchors,
        V=V,
        prototypes=prototypes,
        weight_seed=int(weights.generate_state(1)[0]),
        orders=np.stack([order_rng.permutation(n) for _ in range(epochs)]),
    )


class PMLDDA(ValidatedParameters, BaseEstimator):
    """PML-DDA (dual decomposition alignment, 2026): a decomposition of the kernel features and
    the candidate labels that disambiguates the candidates, then an MLP trained on the
    disambiguated labels with a loss in which only non-candidates are negatives. Needs
    PyTorch (``pip install "pmlbench[deep]"``).

    Args:
        alpha: α, weight of the labels' self-reconstruction ``‖P − PZ‖²`` (demo: 1), >= 0.
        beta: β, weight of the alignment of V with the label prototypes O (demo: 0.1), >= 0.
        gamma: γ, weight of the assignments' closeness to the label softmax (demo: 0.1), > 0.
        ratio: the embedding has ``⌈ratio·h⌉`` dimensions, h the kernel features (demo: 0.8),
            in (0, 1].
        max_iter: the decomposition's iterations at most (demo: 40).
        tol: from the third iteration on, stop when the loss fell by less than this fraction
            between the two iterations before (code: 1e-3), >= 0.
        kernel_map: RBF features on random anchors (``Kernel_mapping.m``; the demo skips it
            for birds only); false: the scaled features themselves.
        hidden1, hidden2: the network's hidden widths (code: 64 and 32; its comments give
            512 and 256 for the larger datasets).
        epochs: at most this many epochs (400); also the cosine schedule's period.
        batch_size: rows per mini-batch (64).
        lr, lr_min: Adam's learning rate (1e-3), annealed to ``lr_min`` (1e-7).
        weight_decay: Adam's L2 weight decay (1e-5).
        patience, min_delta: stop when the epoch loss has not fallen below the best so far
            minus ``min_delta`` (1e-4) for ``patience`` (20) epochs; the best epoch is kept.
        threshold: ``predict`` keeps labels whose output is at least this (code: 0.5).
        rtol: a singular value counts as zero in the decomposition's polar factors when it is
            at most this times the largest, in (0, 1) (docs/methods/pml_dda.md).
        device: ``cpu`` or ``cuda`` (the network only; a GPU's numbers are its own, and the
            device is part of each unit's key).
        threads: PyTorch's intra-op threads and the decomposition's BLAS threads (None: the
            job's thread budget). The default 1 keeps a unit's numbers independent of how
            many jobs a launcher runs at once.
        max_train: the largest training set PML-DDA takes on (its n x n matrices); larger
            ones are refused before any work with :class:`~pmlbench.errors.NotApplicable`
            (None: no cap).
        max_work: the largest n x h, training instances times kernel features (the
            features themselves without the kernel map), refused like ``max_train`` above
            it (None: no cap). The default 1,500,000 admits mirflickr5k (2,500 x 501) and
            yeast, and refuses slashdot and the larger bundled sets, which exceed the suite's
            budget (docs/methods/pml_dda.md, "Cost").
        random_state: seeds the kernel's anchors, the decomposition's start, the network's
            initial weights and each epoch's row order, an integer in [0, 2**32) or None
            (the runner gives each split's seed).
    """

    default_bipartition = {"rule": "method"}
    # α as params_settings.m sets it per dataset: each of its 23 rows takes one of these
    default_tuning_grid = {"alpha": [0.01, 0.1, 1.0]}
    machine_dependent = (
        "the network trains in float32 with PyTorch's CPU kernels, which the machine chooses "
        "(ATen's vector instructions, MKL's code path) and the thread count changes (test "
        "outputs up to 1.8e-7 apart, measured), and the float64 decomposition before it "
        "follows the BLAS kernel, whose rounding its iteration can amplify (1.6e-8, "
        "measured): the outputs differ in their last float32 bits, which can flip near-tied "
        "ranks and thresholds; on a GPU (method.device=cuda) the numbers are the GPU's"
    )
    parameter_constraints = {
        "alpha": NON_NEGATIVE,
        "beta": NON_NEGATIVE,
        "gamma": POSITIVE,
        "ratio": [Interval(float, 0, 1, closed="right")],
        "max_iter": POSITIVE_INT,
        "tol": NON_NEGATIVE,
        "kernel_map": FLAG,
        "hidden1": POSITIVE_INT,
        "hidden2": POSITIVE_INT,
        "epochs": POSITIVE_INT,
        "batch_size": POSITIVE_INT,
        "lr": POSITIVE,
        "lr_min": NON_NEGATIVE,
        "weight_decay": NON_NEGATIVE,
        "patience": POSITIVE_INT,
        "min_delta": NON_NEGATIVE,
        "threshold": [Interval(float)],
        "rtol": [Interval(float, 0, 1, closed="neither")],
        "device": device_constraint(NAME),
        "threads": [None, Interval(int, 1, None)],
        "max_train": CAP,
        "max_work": CAP,
        "random_state": SEED,
    }

    def __init__(
        self,
        alpha: float = 1.0,
        beta: float = 0.1,
        gamma: float = 0.1,
        ratio: float = 0.8,
        max_iter: int = 40,
        tol: float = 1e-3,
        kernel_map: bool = True,
        hidden1: int = 64,
        hidden2: int = 32,
        epochs: int = 400,
        batch_size: int = 64,
        lr: float = 1e-3,
        lr_min: float = 1e-7,
        weight_decay: float = 1e-5,
        patience: int = 20,
        min_delta: float = 1e-4,
        threshold: float = 0.5,
        rtol: float = 1e-10,
        device: str = CPU,
        threads: int | None = 1,
        max_train: int | None = MAX_TRAIN,
        max_work: int | None = MAX_WORK,
        random_state: int | None = None,
    ):
        self.alpha = alpha
        self.beta = beta
        self.gamma = gamma
        self.ratio = ratio
        self.max_iter = max_iter
        self.tol = tol
        self.kernel_map = kernel_map
        self.hidden1 = hidden1
        self.hidden2 = hidden2
        self.epochs = epochs
        self.batch_size = batch_size
        self.lr = lr
        self.lr_min = lr_min
        self.weight_decay = weight_decay
        self.patience = patience
        self.min_delta = min_delta
        self.threshold = threshold
        self.rtol = rtol
        self.device = device
        self.threads = threads
        self.max_train = max_train
        self.max_work = max_work
        self.random_state = random_state

    def kernel_features(self, n: int, d: int) -> int:
        """h, the decomposed features of a training set of n rows and d features: the kernel's
        anchors and a row of ones, or the d features without the kernel map."""
        return n_anchors(n, d) + 1 if self.kernel_map else d

    def refusal(self, n: int, d: int) -> str | None:
        """One line naming the caps a training set of n rows and d features exceeds; None
        within the caps."""
        h = self.kernel_features(n, d)
        over = []
        if self.max_train is not None and n > self.max_train:
            over.append(f"method.max_train={self.max_train}")
        if self.max_work is not None and n * h > self.max_work:
            over.append(f"method.max_work={self.max_work} (n x h = {n * h:,})")
        if not over:
            return None
        lift = " ".join(f"{cap.split('=')[0]}=null" for cap in over)
        return (
            f"PML-DDA on {n:,} training instances and {h:,} kernel features multiplies "
            f"{n:,} x {n:,} by {n:,} x {h:,} matrices in each of up to {self.max_iter} "
            f"iterations of its decomposition, then trains its network for up to "
            f"{self.epochs} epochs, over {' and '.join(over)}, "
            f"{'a cap' if len(over) == 1 else 'caps'} set for the suite's budget "
            f"({BUDGET_NOTE}); set {lift} to run it anyway"
        )

    def draws(self, n: int, d: int, q: int) -> Draws:
        """The random parts of a fit on n rows, d features, q labels (:func:`draws`)."""
        return draws(
            self.random_state,
            n,
            d,
            q,
            ratio=float(self.ratio),
            kernel_map=bool(self.kernel_map),
            epochs=int(self.epochs),
        )

    def fit(self, X, Y) -> PMLDDA:
        """Scale and map the features, decompose, then train the network."""
        start = time.perf_counter()
        self._validate_params()
        X = as_dense(check_features(X), dtype=np.float64)
        Y = check_label_matrix(Y, what="candidate labels", n_rows=X.shape[0])
        n, d = X.shape
        q = Y.shape[1]
        refusal = self.refusal(n, d)
        if refusal is not None:
            raise NotApplicable(refusal)
        device, threads = str(self.device), thread_budget(self.threads)
        self.scale_low_, self.scale_span_ = minmax_fit(X)
        Xs = minmax_apply(X, self.scale_low_, self.scale_span_)
        if self.kernel_map and n > 0 and not (Xs != Xs[0]).any():
            raise PmlbenchError(
                "pml_dda: every training instance has the same features, so the kernel's "
                "width (the mean squared distance to the anchors) is 0; check the dataset or "
                "set method.kernel_map=false"
            )
        random = self.draws(n, d, q)
        self.kernel_: KernelMap | None = None
        with threadpool_limits(threads, user_api="blas"):
            if random.anchors is not None:
                self.kernel_, phi = KernelMap.fit(Xs, random.anchors, method=NAME)
            else:
                phi = Xs.T
            decomposition = decompose(
                phi,
                Y.T,
                random.V,
                random.prototypes,
                alpha=float(self.alpha),
                beta=float(self.beta),
                gamma=float(self.gamma),
                max_iter=int(self.max_iter),
                tol=float(self.tol),
                rtol=float(self.rtol),
            )
            embedded = (decomposition.U.T @ phi).T
        decomposed = time.perf_counter()
        with torch_session(device, threads, NAME) as torch:
            network = build_network(
                torch,
                embedded.shape[1],
                (int(self.hidden1), int(self.hidden2)),
                q,
                random.weight_seed,
            ).to(device)
            training = train(
                torch,
                network,
                torch.from_numpy(embedded.astype(np.float32)).to(device),
                torch.from_numpy(decomposition.P.T.astype(np.float32)).to(device),
                torch.from_numpy(Y.astype(np.float32)).to(device),
                random.orders,
                batch_size=int(self.batch_size),
                lr=float(self.lr),
                lr_min=float(self.lr_min),
                weight_decay=float(self.weight_decay),
                patience=int(self.patience),
                min_delta=float(self.min_delta),
            )
            self.network_ = network.eval()
            version = str(torch.__version__)
        self.n_features_in_ = d
        self.projection_ = decomposition.U
        self.decomposition_ = decomposition
        self.embedded_ = embedded
        self.disambiguation_scores_ = decomposition.P.T.copy()
        self.diagnostics_ = self._diagnostics(decomposition, training, device, threads, version)
        self.diagnostics_["decomposition_seconds"] = round(decomposed - start, 3)
        self.diagnostics_["fit_seconds"] = round(time.perf_counter() - start, 3)
        return self

    def _diagnostics(self, decomposition: Decomposition, training, device, threads, version):
        return {
            "iterations": decomposition.iterations,
            "stopped_by_tol": decomposition.iterations < int(self.max_iter),
            "loss": float(f"{decomposition.losses[-1]:.6g}"),
            "embedding": int(decomposition.U.shape[1]),
            "kernel_features": int(decomposition.U.shape[0]),
            "rank_deficient_u_steps": decomposition.rank_deficient_u,
            "rank_deficient_q_steps": decomposition.rank_deficient_q,
            "epochs": len(training.losses),
            "best_epoch": training.best_epoch,
            "best_loss": float(f"{training.best_loss:.6g}"),
            "device": device,
            "threads": threads,
            "torch": version,
        }

    def embed(self, X) -> np.ndarray:
        """The embedded features ``(Uᵀφ(x))ᵀ`` of the rows of X (n x m, float64)."""
        X = as_dense(check_features(X), dtype=np.float64)
        check_feature_count(X, self.n_features_in_, method=NAME)
        Xs = minmax_apply(X, self.scale_low_, self.scale_span_)
        with threadpool_limits(thread_budget(self.threads), user_api="blas"):
            phi = self.kernel_.transform(Xs) if self.kernel_ is not None else Xs.T
            return (self.projection_.T @ phi).T

    def network_outputs(self, X) -> np.ndarray:
        """The network's outputs σ(·) on the rows of X (float32), in batches of
        ``batch_size``."""
        features = self.embed(X).astype(np.float32)
        device = str(self.device)
        with torch_session(device, thread_budget(self.threads), NAME) as torch:
            tensor = torch.from_numpy(features).to(device)
            return outputs(torch, self.network_, tensor, int(self.batch_size))

    def decision_function(self, X) -> np.ndarray:
        """The network's outputs in (0, 1), n x q (float64)."""
        return self.network_outputs(X).astype(np.float64)

    def predict(self, X) -> np.ndarray:
        """Labels whose output is at least ``threshold`` (the code's ``>= 0.5``)."""
        return (self.network_outputs(X) >= self.threshold).astype(np.uint8)
