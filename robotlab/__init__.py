"""robotlab."""
