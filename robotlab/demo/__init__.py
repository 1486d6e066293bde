"""The offline demo behind ``make demo`` (``python -m robotlab.demo``) and its parts."""
