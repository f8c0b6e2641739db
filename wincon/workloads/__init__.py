"""Workloads: the image catalog, manifest rendering and OS pinning; the images: which a check uses, whether
they run on the nodes (``wincon images verify``), pre-pulling, and pulling with the user's registry
credentials."""
