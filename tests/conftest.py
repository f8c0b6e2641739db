"""The project's own tests: unit/ needs nothing; integration/ needs the local cluster."""

pytest_plugins = ["pytester"]
