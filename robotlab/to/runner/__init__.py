"""A run from start to summary: set-up, the iteration loop, one iteration, outcomes, stop
conditions."""
