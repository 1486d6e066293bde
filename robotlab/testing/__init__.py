"""robotlab/testing."""
