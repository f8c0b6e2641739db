"""The networking suites' framework, by concern, on the ``kube`` client.

``pods``      what checks talk to (PodRef) and the pods they run in: netservers, clients, HostProcess and
              hostNetwork pods, created for real and checked to have run where pinned.
``services``  Services (ServiceRef), their Endpoints and EndpointSlices, LoadBalancer addresses, cluster DNS.
``objects``   ``NetworkObjects``: a module's factory of pods and Services for tests that need their own.
``flows``     ``FlowChecks``: the traffic checks (dial, HTTP GET, DNS look-up, ping, port-forward), every one
              through the data-plane gate. The command lines and parsers are in ``wincon.windows.connectivity``.
"""
