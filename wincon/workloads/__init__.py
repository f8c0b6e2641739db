"""Workloads: the image catalog, manifest rendering and OS pinning."""
