"""The spoke's Deployment and what it is wired to: hardening (non-root, read-only root, no
capabilities, no privilege escalation, RuntimeDefault seccomp, requests and limits); two
replicas spread over nodes; probes, ports and Services on the controller's own default
addresses (imported, not copied); the args parse with `run`'s flags and point into the
mounts of the hub kubeconfig Secret and the reporters ConfigMap; the settings are known
ADDON_STATUS_* variables; the selectors of the Services, the ServiceMonitor, the PDB and the
NetworkPolicy select the controller's pods and name its ports."""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from pathlib import Path, PurePosixPath
from typing import Any, Final

import pytest

from controller.spoke.addon import AddonRef
from controller.spoke.options import DEFAULT_LEASE, Address, RunOptions
from tests.manifests.kustomize import MANIFESTS, ROOT, build, find
from tests.manifests.pod import flag_value, options_of, pod_environment, run_parser

Obj = dict[str, Any]
HUB_SECRET: Final = "addon-status-hub-kubeconfig"


def env_name(flag: str) -> str:
    return "ADDON_STATUS_" + flag.removeprefix("--").replace("-", "_").upper()


def port(container: Obj, name: str) -> int:
    found = [p["containerPort"] for p in container["ports"] if p["name"] == name]
    assert len(found) == 1, f"no container port named {name}"
    return int(found[0])


def selects(selector: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    match = selector.get("matchLabels", selector)
    assert match and "matchExpressions" not in selector
    return all(labels.get(k) == v for k, v in match.items())


def default_report_port() -> int:
    return Address.parse(RunOptions().report_address).port


# --- hardening ------------------------------------------------------------------------------


def test_two_replicas_with_the_pod_labels_the_selector_asks_for(deployment: Obj) -> None:
    spec = deployment["spec"]
    assert spec["replicas"] == 2
    assert selects(spec["selector"], spec["template"]["metadata"]["labels"])


def test_rolling_update_one_pod_at_a_time(deployment: Obj) -> None:
    """A follower is ready (it answers reports with 503 + Retry-After), so a rolling update can
    replace one replica at a time and keep one serving."""
    assert deployment["spec"]["strategy"] == {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0},
    }


def test_the_pod_runs_as_non_root_with_runtime_default_seccomp(pod: Obj, container: Obj) -> None:
    for context in (pod["securityContext"], container["securityContext"]):
        assert context["runAsNonRoot"] is True
        assert context["seccompProfile"] == {"type": "RuntimeDefault"}
        assert context.get("runAsUser", 1) != 0


def test_the_container_is_locked_down(container: Obj) -> None:
    context = container["securityContext"]
    assert context["readOnlyRootFilesystem"] is True
    assert context["allowPrivilegeEscalation"] is False
    assert context.get("privileged", False) is False
    assert context["capabilities"] == {"drop": ["ALL"]}


def test_requests_and_limits_for_cpu_and_memory(container: Obj) -> None:
    resources = container["resources"]
    for kind in ("requests", "limits"):
        assert set(resources[kind]) == {"cpu", "memory"}, kind
    assert _millicores(resources["requests"]["cpu"]) <= _millicores(resources["limits"]["cpu"])
    assert _mebibytes(resources["requests"]["memory"]) <= _mebibytes(resources["limits"]["memory"])


def _millicores(text: str) -> int:
    return int(text[:-1]) if text.endswith("m") else int(float(text) * 1000)


def _mebibytes(text: str) -> int:
    units = {"Mi": 1, "Gi": 1024}
    return int(text[:-2]) * units[text[-2:]]


def test_the_token_is_mounted_for_the_controller_only(spoke: list[Obj], pod: Obj) -> None:
    account = find(spoke, "ServiceAccount", pod["serviceAccountName"])
    assert account["automountServiceAccountToken"] is False
    assert pod["automountServiceAccountToken"] is True


def test_replicas_spread_over_nodes(deployment: Obj, pod: Obj) -> None:
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    spreads = {c["topologyKey"]: c for c in pod["topologySpreadConstraints"]}
    assert selects(spreads["kubernetes.io/hostname"]["labelSelector"], labels)
    anti = pod["affinity"]["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"]
    assert any(
        t["podAffinityTerm"]["topologyKey"] == "kubernetes.io/hostname"
        and selects(t["podAffinityTerm"]["labelSelector"], labels)
        for t in anti
    )


def test_tmp_is_the_one_writable_directory(container: Obj, pod: Obj) -> None:
    volumes = {v["name"]: v for v in pod["volumes"]}
    writable = [m for m in container["volumeMounts"] if not m.get("readOnly")]
    assert [m["mountPath"] for m in writable] == ["/tmp"]
    assert "emptyDir" in volumes[writable[0]["name"]]


# --- probes, ports and Services on the controller's defaults --------------------------------


def test_probes_on_the_probe_port(container: Obj) -> None:
    probe_port = RunOptions().probe_address.port
    assert port(container, "probes") == probe_port
    paths = {
        "livenessProbe": "/healthz",
        "readinessProbe": "/readyz",
        "startupProbe": "/healthz",
    }
    for probe, path in paths.items():
        assert container[probe]["httpGet"] == {"path": path, "port": "probes"}, probe


def test_container_ports_are_the_controller_defaults(container: Obj) -> None:
    assert port(container, "metrics") == RunOptions().metrics_address.port
    assert port(container, "reports") == default_report_port()


@pytest.mark.parametrize(
    ("service", "port_name"),
    [("addon-status-reports", "reports"), ("addon-status-metrics", "metrics")],
)
def test_services_select_the_pods_and_forward_to_their_named_port(
    spoke: list[Obj], deployment: Obj, container: Obj, service: str, port_name: str
) -> None:
    spec = find(spoke, "Service", service)["spec"]
    assert selects(spec["selector"], deployment["spec"]["template"]["metadata"]["labels"])
    [service_port] = spec["ports"]
    assert service_port["targetPort"] == port_name
    assert service_port["port"] == port(container, port_name)


def test_the_service_monitor_scrapes_only_the_metrics_service(spoke: list[Obj]) -> None:
    spoke = build(MANIFESTS / "components" / "monitoring", onto=spoke).objects
    monitor = find(spoke, "ServiceMonitor")["spec"]
    chosen = [
        s["metadata"]["name"]
        for s in spoke
        if s["kind"] == "Service" and selects(monitor["selector"], s["metadata"]["labels"])
    ]
    assert chosen == ["addon-status-metrics"]
    service = find(spoke, "Service", "addon-status-metrics")
    assert [e["port"] for e in monitor["endpoints"]] == [service["spec"]["ports"][0]["name"]]
    assert monitor["endpoints"][0]["path"] == "/metrics"


def test_the_disruption_budget_covers_the_pods(spoke: list[Obj], deployment: Obj) -> None:
    budget = find(spoke, "PodDisruptionBudget")["spec"]
    assert selects(budget["selector"], deployment["spec"]["template"]["metadata"]["labels"])
    assert budget["maxUnavailable"] == 1
    assert budget["unhealthyPodEvictionPolicy"] == "AlwaysAllow"


def test_reports_are_admitted_only_from_the_addon_namespace(
    spoke: list[Obj], deployment: Obj, container: Obj
) -> None:
    policy = find(spoke, "NetworkPolicy")["spec"]
    assert selects(policy["podSelector"], deployment["spec"]["template"]["metadata"]["labels"])
    assert policy["policyTypes"] == ["Ingress"]
    sources = {str(p["port"]): rule["from"] for rule in policy["ingress"] for p in rule["ports"]}
    assert set(sources) <= {p["name"] for p in container["ports"]}
    namespace = deployment["metadata"]["namespace"]
    assert sources["reports"] == [
        {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}}}
    ]
    assert "probes" not in sources  # the kubelet's probes are never filtered


# --- args, environment, mounts --------------------------------------------------------------


def test_the_args_are_flags_of_run_and_elect_a_leader_on_the_roles_lease(
    spoke: list[Obj], deployment: Obj, container: Obj, tmp_path: Path
) -> None:
    options = options_of(spoke, deployment, files=tmp_path)
    assert options.leader_elect is True
    assert options.lease_ref.name == DEFAULT_LEASE
    assert options.lease_ref.namespace == deployment["metadata"]["namespace"]
    lease_rules = [r for r in find(spoke, "Role")["rules"] if r["resources"] == ["leases"]]
    assert [r.get("resourceNames") for r in lease_rules] == [None, [options.lease_ref.name]]


def test_the_environment_and_settings_name_known_options(spoke: list[Obj], deployment: Obj) -> None:
    known = {env_name(a.option_strings[0]) for a in run_parser()._actions if a.option_strings}
    ours = {n for n in pod_environment(spoke, deployment) if n.startswith("ADDON_STATUS_")}
    assert ours <= known, ours - known


def test_the_options_of_the_pod_replicate_to_this_clusters_namespace_on_the_hub(
    spoke: list[Obj], deployment: Obj, hub: list[Obj], tmp_path: Path
) -> None:
    options = options_of(spoke, deployment, files=tmp_path)
    assert options.kubeconfig is None  # in-cluster: the pod's service account
    assert options.ref.namespace == deployment["metadata"]["namespace"]
    binding = find(hub, "RoleBinding", "addon-status-hub")
    assert options.hub_ref == AddonRef(binding["metadata"]["namespace"], options.addon_name)
    for rule in find(hub, "ClusterRole", binding["roleRef"]["name"])["rules"]:
        assert rule["resourceNames"] == [options.hub_ref.name]


def test_pod_name_comes_from_the_downward_api(container: Obj) -> None:
    env = {e["name"]: e for e in container["env"]}
    assert env["POD_NAME"]["valueFrom"] == {"fieldRef": {"fieldPath": "metadata.name"}}


def _mounted_file(container: Obj, pod: Obj, path: str) -> tuple[Obj, str]:
    """The volume a file path lies in, and the file's key in it."""
    file = PurePosixPath(path)
    mounts = [m for m in container["volumeMounts"] if file.parent == PurePosixPath(m["mountPath"])]
    assert len(mounts) == 1, f"{path} is in no mount"
    assert mounts[0].get("readOnly") is True
    volume = next(v for v in pod["volumes"] if v["name"] == mounts[0]["name"])
    return volume, file.name


def test_the_hub_kubeconfig_is_read_from_the_secret_mount(container: Obj, pod: Obj) -> None:
    volume, key = _mounted_file(container, pod, flag_value(container, "--hub-kubeconfig"))
    assert volume["secret"]["secretName"] == HUB_SECRET
    assert volume["secret"]["items"] == [{"key": "kubeconfig", "path": key}]
    assert volume["secret"].get("optional", False) is False
    assert volume["secret"]["defaultMode"] == 0o440


def test_the_authorization_file_is_the_reporters_config_map(
    spoke: list[Obj], container: Obj, pod: Obj
) -> None:
    volume, key = _mounted_file(container, pod, flag_value(container, "--authorization"))
    config_map = find(spoke, "ConfigMap", volume["configMap"]["name"])
    assert key in config_map["data"]


def test_the_image_tag_is_the_project_version(spoke: list[Obj], container: Obj) -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert container["image"].rsplit(":", 1) == ["addon-status", project["version"]]
