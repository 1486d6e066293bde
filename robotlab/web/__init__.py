"""The crew in a browser (``robotlab web``).

Members, dead letters and traffic, live over server-sent events.
"""
