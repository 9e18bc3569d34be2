"""Foundations every layer may use: input checks, parameter constraints, content digests,
atomic file writes, the shared-work cache, the console and the parallelism budget."""
