"""Numerical building blocks shared by the methods: kNN search, label enrichment, linear
algebra and an in-process memo for work that depends only on the training data."""
