"""Talking to the cluster: client and retries, namespaces, waits, exec and diagnostics, and ``kube`` (the
client suites use)."""
