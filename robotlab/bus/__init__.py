"""robotlab/bus."""
