"""The settings `run` adds for a whole replica — the report API's flags, the hub copy, leader
election — follow the same rule as the others: a flag over its `ADDON_STATUS_*` variable over
the default, and a mistake is one line naming the flag and the variable."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from controller.process import replica_identity
from controller.spoke.addon import AddonRef
from controller.spoke.options import (
    DEFAULT_LEASE,
    DEFAULT_NAMESPACE,
    OptionsError,
)
from tests.support import run_options

pytestmark = pytest.mark.slow


def test_defaults_run_one_replica_without_a_hub() -> None:
    o = run_options([])
    assert (o.leader_elect, o.hub_kubeconfig, o.hub_ref) == (False, None, None)
    assert o.lease_ref == AddonRef(DEFAULT_NAMESPACE, DEFAULT_LEASE)
    assert (o.lease_duration, o.renew_deadline, o.retry_period) == (
        timedelta(seconds=15),
        timedelta(seconds=10),
        timedelta(seconds=2),
    )
    assert (o.hub_copy, o.hub_resync, o.hub_create_missing) == (
        "conditions",
        timedelta(minutes=5),
        False,
    )
    report = o
    assert (report.report_address, report.insecure, report.operator_identity) == (
        ":8090",
        False,
        (),
    )


@pytest.mark.parametrize(
    ("argv", "environ", "expected"),
    [
        pytest.param([], {"ADDON_STATUS_LEADER_ELECT": "true"}, True, id="variable-over-default"),
        pytest.param(["--no-leader-elect"], {"ADDON_STATUS_LEADER_ELECT": "true"}, False,
                     id="flag-over-variable"),
        pytest.param(["--leader-elect"], {"ADDON_STATUS_LEADER_ELECT": "false"}, True,
                     id="switch-over-variable"),
    ],
)  # fmt: skip
def test_a_switch_follows_flag_over_variable_over_default(
    argv: list[str], environ: dict[str, str], expected: bool
) -> None:
    assert run_options(argv, environ).leader_elect is expected


def test_the_report_apis_flags_read_their_variables_too() -> None:
    env = {
        "ADDON_STATUS_REPORT_ADDRESS": "127.0.0.1:9443",
        "ADDON_STATUS_OPERATOR_IDENTITY": "system:serviceaccount:x:operator",
        "ADDON_STATUS_COLLECTOR_IDENTITY": "metrics-collector=a, uwl-metrics-collector=b",
    }
    report = run_options(["--operator-identity", "from-flag"], env)
    assert report.report_address == "127.0.0.1:9443"
    assert report.operator_identity == ("from-flag",)
    assert report.collector_identity == ("metrics-collector=a", "uwl-metrics-collector=b")


def test_the_hub_copy_is_named_by_the_cluster_and_the_addon(tmp_path: Path) -> None:
    hub = tmp_path / "hub-kubeconfig"
    hub.write_text("apiVersion: v1\n")
    o = run_options(["--hub-kubeconfig", str(hub), "--addon-name", "spoke-addon"],
                {"ADDON_STATUS_CLUSTER_NAME": "cluster7"})  # fmt: skip
    assert o.hub_ref == AddonRef("cluster7", "spoke-addon")
    renamed = run_options(["--hub-kubeconfig", str(hub), "--cluster-name", "cluster7",
                       "--hub-addon-name", "hub-addon"])  # fmt: skip
    assert renamed.hub_ref == AddonRef("cluster7", "hub-addon")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        pytest.param(["--hub-kubeconfig", __file__],
                     "--cluster-name / ADDON_STATUS_CLUSTER_NAME: required with --hub-kubeconfig",
                     id="hub-without-cluster-name"),
        pytest.param(["--hub-kubeconfig", "/no/such/file", "--cluster-name", "c1"],
                     "kubeconfig /no/such/file: no such file", id="missing-hub-kubeconfig"),
        pytest.param(["--renew-deadline", "20s"],
                     "need lease duration > renew deadline > retry period", id="lease-timings"),
        pytest.param(["--hub-copy", "spec"], "--hub-copy / ADDON_STATUS_HUB_COPY", id="hub-copy"),
        pytest.param(["--cluster-name", "Cluster_1"], "--cluster-name / ADDON_STATUS_CLUSTER_NAME",
                     id="cluster-name-not-a-namespace"),
        pytest.param(["--report-address", "8090"],
                     "--report-address / ADDON_STATUS_REPORT_ADDRESS: '8090' is not host:port",
                     id="report-address"),
    ],
)  # fmt: skip
def test_a_mistake_is_one_line_naming_flag_and_variable(argv: list[str], message: str) -> None:
    with pytest.raises(OptionsError, match=message.replace("(", r"\(").replace("+", r"\+")):
        run_options(argv)


def test_the_lease_identity_is_the_pod_name_else_unique_per_process() -> None:
    assert replica_identity({"POD_NAME": "addon-status-5f7b-abcde"}) == "addon-status-5f7b-abcde"
    assert replica_identity({}) != replica_identity({})
