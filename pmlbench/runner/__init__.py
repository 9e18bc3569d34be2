"""The runner: units of work and their keys, the result store, run directories, threads."""
