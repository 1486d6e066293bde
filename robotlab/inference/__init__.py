"""How a model call is bounded and judged: one deadline for it and its retries, and its failure's cause."""
