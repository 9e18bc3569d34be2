"""The experimental protocol: seeded splits, one experiment, bipartition and tuning."""
