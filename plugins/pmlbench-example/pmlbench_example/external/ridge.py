"""Ridge-regression PML baseline as a stand-alone program (stands in for MATLAB code).

Usage: python ridge.py TRAIN TEST OUT    (files .npz or .mat, by extension)

Reads X, Y (candidates, instances x labels) and param_lam from TRAIN and X from TEST; fits
W = argmin ||[1 X] W - Y||^2 + lam ||W without its bias row||^2 in closed form and writes
scores = [1 X_test] W and labels = scores >= 0.5 to OUT. Uses numpy and scipy only, as an
external program would, and mirrors ridge.m line for line.
"""

import sys

import numpy as np
import scipy.io
import scipy.sparse as sp


def read(path):
    if path.endswith(".npz"):
        with np.load(path, allow_pickle=False) as data:
            return {k: data[k] for k in data.files}
    return scipy.io.loadmat(path)


def dense(a):
    return a.toarray() if sp.issparse(a) else np.asarray(a, dtype=np.float64)


def main(train_path, test_path, out_path):
    train, test = read(train_path), read(test_path)
    X, Y = dense(train["X"]), dense(train["Y"])
    lam = float(np.ravel(train["param_lam"])[0])
    X1 = np.hstack([np.ones((X.shape[0], 1)), X])
    Xt1 = np.hstack([np.ones((test["X"].shape[0], 1)), dense(test["X"])])
    penalty = lam * np.eye(X1.shape[1])
    penalty[0, 0] = 0.0
    W = np.linalg.solve(X1.T @ X1 + penalty, X1.T @ Y)
    scores = Xt1 @ W
    labels = (scores >= 0.5).astype(np.float64)
    if out_path.endswith(".npz"):
        np.savez(out_path, scores=scores, labels=labels)
    else:
        scipy.io.savemat(out_path, {"scores": scores, "labels": labels})


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit("usage: ridge.py TRAIN TEST OUT")
    main(*sys.argv[1:])
