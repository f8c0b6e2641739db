"""Talking to the cluster: client and retries, namespaces, waits, exec and diagnostics."""
