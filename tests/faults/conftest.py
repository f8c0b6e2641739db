"""Fault-injection tests share the integration tests' fixtures (binaries present, cluster names)."""

from tests.integration.conftest import localcluster_binaries  # noqa: F401
