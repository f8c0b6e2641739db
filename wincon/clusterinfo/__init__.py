"""What the cluster is: its profile (discovery), the nodes an item runs on, AKS, and the capabilities a check
needs of it.
"""
