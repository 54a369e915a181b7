"""Files the running app reads through importlib.resources (icon, demo memory)."""
