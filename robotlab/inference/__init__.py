"""How a model call is bounded and judged.

One deadline for it and its retries, and its reply; its failure's cause is classified
beside the errors (``robotlab.errors.causes``).
"""
