"""robotlab/to."""
