"""What upstream and the documents say: the cited sources, documented limitations, upstream's e2e tests and
the parity coverage, the Kubernetes releases the suite knows, and the suites' test ids.
"""
