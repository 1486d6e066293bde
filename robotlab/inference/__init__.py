"""How a model call is bounded and judged.

One deadline for it and its retries, and its failure's cause.
"""
