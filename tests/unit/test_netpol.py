"""The NetworkPolicy engine's kernel probe (wincon/localcluster/netpol.py), with the commands faked."""

from __future__ import annotations

import subprocess
from typing import Any

import pytest

from wincon.localcluster import netpol

REFUSED = (
    "/dev/stdin:4:18-22: Error: Could not process rule: No such file or directory\n"
    "    ct state new queue num 100 bypass\n"
    "                 ^^^^^\n"
)


class FakeRun:
    """Records each command; answers ``nft -f -`` with ``nft_rc``/``nft_err`` and ``test -e`` with ``has_queue``."""

    def __init__(self, nft_rc: int = 0, nft_err: str = "", has_queue: bool = True, nft_raises: bool = False):
        self.calls: list[tuple[list[str], Any]] = []
        self.nft_rc, self.nft_err, self.has_queue, self.nft_raises = nft_rc, nft_err, has_queue, nft_raises

    def __call__(self, args: list[str], **kwargs: Any) -> subprocess.CompletedProcess:
        self.calls.append((args, kwargs.get("input")))
        if args[-3:] == ["nft", "-f", "-"]:
            if self.nft_raises:
                raise subprocess.TimeoutExpired(args, 20)
            return subprocess.CompletedProcess(args, self.nft_rc, "", self.nft_err)
        if "test" in args:
            return subprocess.CompletedProcess(args, 0 if self.has_queue else 1, "", "")
        return subprocess.CompletedProcess(args, 0, "", "")


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> Any:
    def make(**kwargs: Any) -> FakeRun:
        run = FakeRun(**kwargs)
        monkeypatch.setattr(netpol.subprocess, "run", run)
        return run

    return make


def test_the_ruleset_queues_new_connections_to_the_engines_queue_in_a_table_of_the_probe() -> None:
    text = netpol.ruleset()
    assert f"table inet {netpol.TABLE} {{" in text
    assert "type filter hook forward priority -5; policy accept;" in text
    assert "ct state new queue num 100 bypass" in text
    assert "ct state new counter" in netpol.ruleset("counter")


def test_the_probe_asks_in_a_namespace_of_its_own_and_deletes_it(fake: Any) -> None:
    run = fake()
    answer = netpol.ask_kernel()
    ns = netpol.probe_netns()
    commands = [args for args, _ in run.calls]
    assert commands[0] == ["ip", "netns", "add", ns]
    assert commands[-1] == ["ip", "netns", "delete", ns]
    nft = [(args, given) for args, given in run.calls if args[-3:] == ["nft", "-f", "-"]]
    assert nft == [(["ip", "netns", "exec", ns, "nft", "-f", "-"], netpol.ruleset())]
    assert all(args[:4] == ["ip", "netns", "exec", ns] for args in commands[1:-1])  # never the host's ruleset
    assert answer == netpol.KernelAnswer(True, None)
    assert answer.can_run_engine
    assert "can enforce here" in answer.describe()


def test_a_refused_queue_rule_is_reported_in_nfts_own_words(fake: Any) -> None:
    fake(nft_rc=1, nft_err=REFUSED)
    answer = netpol.ask_kernel()
    assert answer.queue_rule_error == "/dev/stdin:4:18-22: Error: Could not process rule: No such file or directory"
    assert not answer.can_run_engine
    assert answer.describe() == (
        "kube-network-policies v0.7.0 cannot enforce on this kernel: an nftables queue rule is refused: "
        "/dev/stdin:4:18-22: Error: Could not process rule: No such file or directory"
    )


def test_a_kernel_without_nfnetlink_queue_cannot_run_the_engine_even_if_the_rule_is_taken(fake: Any) -> None:
    fake(has_queue=False)
    answer = netpol.ask_kernel()
    assert answer == netpol.KernelAnswer(False, None)
    assert not answer.can_run_engine
    assert f"no nfnetlink_queue ({netpol.PROC_QUEUE} is absent)" in answer.describe()


def test_the_namespace_is_deleted_when_nft_itself_fails(fake: Any) -> None:
    run = fake(nft_raises=True)
    with pytest.raises(subprocess.TimeoutExpired):
        netpol.ask_kernel()
    assert run.calls[-1][0] == ["ip", "netns", "delete", netpol.probe_netns()]


def test_first_error_falls_back_to_the_first_line() -> None:
    assert netpol.first_error("nft: command not found\n") == "nft: command not found"
    assert netpol.first_error("") == "no output"


def test_main_exits_1_and_says_why_where_the_kernel_refuses(fake: Any, capsys: pytest.CaptureFixture[str]) -> None:
    fake(nft_rc=1, nft_err=REFUSED)
    assert netpol.main() == 1
    assert "cannot enforce on this kernel" in capsys.readouterr().out
