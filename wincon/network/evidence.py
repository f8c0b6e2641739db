"""What a networking deviation accepts as its own evidence (``expect_deviation(accepts=...)``): predicates on the
output a check has in hand, True only where it is the documented deviation's positive form, never a tool that
failed, printed an error or timed out. (curl's and ping's own forms: ``wincon.network.flows.no_answer`` and
``ping_unanswered``.)

Each form is what the suite's own tools print, the same program on both OSes (agnhost's netexec; the kubelet's
streaming server), cited from k8s.io/kubernetes v1.34.4 and k8s.io/kubelet v0.34.4: no Windows tool's text is
assumed here.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable

from wincon.cluster.exec import ExecResult
from wincon.windows import connectivity as conn

# What collect_dial records for a try in which the client's own netexec did not answer (the exec failed, curl
# could not reach the client pod): the tool failing, not the target staying silent.
CLIENT_DID_NOT_ANSWER = "netexec /dial did not answer"
# How FlowChecks.dial's note starts where it did not dial at all (a name whose resolver was seen silent).
NOT_DIALLED = "not dialled"


# The deviation dial_unanswered accepts, as the checks name it.
DIAL_UNANSWERED = "the client's netexec answered and no endpoint answered it"


def dial_unanswered(outcome: conn.DialOutcome) -> bool:
    """No endpoint answered the dial, and the client's netexec itself answered with its own dial errors.

    netexec's /dial tries the target and answers JSON with an "errors" entry per try that failed
    (test/images/agnhost/netexec/netexec.go:443-460 at v1.34.4; the same agnhost program runs in the Windows
    image): positive evidence that the client worked and the target did not answer it. An outcome with any
    response (the flow carried traffic, even to the wrong pod), or whose only errors are tries in which the
    client's netexec did not answer (``CLIENT_DID_NOT_ANSWER``), or a dial that was not run (``NOT_DIALLED``), is
    not.
    """
    if outcome.responses or outcome.tries == 0 or outcome.note.startswith(NOT_DIALLED):
        return False
    return any(not error.startswith(CLIENT_DID_NOT_ANSWER) for error in outcome.errors)


def stayed_with(seen: Iterable[str], sticky: str) -> bool:
    """Every dial after an idle period was answered, each by ``sticky``: the affinity outlived its timeout.
    A dial that got no answer ('') shows nothing about affinity, so it is not the deviation."""
    answers = list(seen)
    return bool(answers) and bool(sticky) and all(answer == sticky for answer in answers)


def reported_source(answer: str) -> str | None:
    """The source address in netexec's /clientip answer (``r.RemoteAddr``: "ip:port", "[ipv6]:port";
    netexec.go:289-292 at v1.34.4), or None where the answer is not one."""
    host, sep, port = answer.strip().rpartition(":")
    if not sep or not port.isdigit():
        return None
    host = host.strip("[]")
    try:
        return str(ipaddress.ip_address(host))
    except ValueError:
        return None


def source_rewritten(answer: str, client_addresses: Iterable[str]) -> bool:
    """The backend's /clientip answered a well-formed source address that is none of the client's: the source
    IP was not preserved. An answer that is not an address (an error page, nothing) is not the deviation."""
    source = reported_source(answer)
    if source is None:
        return False
    own = set()
    for address in client_addresses:
        try:
            own.add(str(ipaddress.ip_address(address)))
        except ValueError:
            continue
    return bool(own) and source not in own


def answered_by_backend(result: ExecResult, backends: Iterable[str]) -> bool:
    """curl exited 0 with a backend pod's own /hostname (netexec.go:348-351): the node forwarded the request to
    that pod. An error, nothing, or another body is not the deviation."""
    names = {name.lower() for name in backends}
    return result.ok and result.stdout.strip().lower() in names


def port_forward_refused(answer: str, port: int) -> bool:
    """The kubelet's streaming server reported on the port-forward's error stream that it could not forward the
    port to the pod: "error forwarding port <port> to pod <pod>, uid <uid>: <the runtime's error>"
    (k8s.io/kubelet v0.34.4 pkg/cri/streaming/portforward/websocket.go:194-197, httpstream.go:255-258), as
    ``FlowChecks.port_forward_get`` returns it. A body from the pod, a socket error without it or an API error
    is not the deviation."""
    return f"error forwarding port {port} to pod " in answer
