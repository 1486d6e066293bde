"""The crew in a browser (``robotlab web``): members, dead letters and traffic, live over server-sent events."""
