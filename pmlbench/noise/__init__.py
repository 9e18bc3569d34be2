"""Candidate-label noise models: ``callable(Y_true, rng, **params) -> Y_candidates``."""
