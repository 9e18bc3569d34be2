"""Plugin machinery: discovery through entry points, contracts, config nodes and presets."""
