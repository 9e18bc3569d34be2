"""The Hydra integration: the config tree, the task function and sweep progress."""
