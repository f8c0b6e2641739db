"""wincon: a conformance suite for the Windows nodes of Kubernetes clusters."""

__version__ = "0.1.0"
