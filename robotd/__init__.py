"""robotd."""
