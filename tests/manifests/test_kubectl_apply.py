"""The real kubectl applies manifests/with-namespace to a demo spoke (kubesim as `addon-status
demo` starts it, the rollout's agent already installed): every object, the CRD included, is
created or patched, with kubectl's default validation. kube-apiserver serves kubectl the
OpenAPI v3 index and documents it checks before an apply (cli-runtime's QueryParamVerifierV3:
the PATCH operation of each kind takes `fieldValidation`), so kubectl validates on the server
(`fieldValidation=Strict`): an unknown field is refused, and no `--validate=false` is needed."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from controller.demo.scenario_file import read
from controller.demo.servers import rollout, spoke_server
from tests.manifests.kustomize import MANIFESTS, ROOT
from tests.support import KUBECTL

pytestmark = pytest.mark.integration


def kubectl(url: str, *args: str) -> subprocess.CompletedProcess[str]:
    assert KUBECTL is not None, "kubectl: pip install -e '.[test]' installs it"
    return subprocess.run([KUBECTL, "--server", url, *args], capture_output=True, text=True,
                          timeout=120, check=False)  # fmt: skip


def test_kubectl_apply_of_with_namespace_to_a_demo_spoke_works(tmp_path: Path) -> None:
    scenario = read(ROOT / "controller" / "demo" / "story.yaml")
    share = rollout(["cluster1"])["cluster1"]
    with spoke_server(scenario, (), share.agent) as spoke:
        applied = kubectl(spoke.url, "apply", "-k", str(MANIFESTS / "with-namespace"))
        assert applied.returncode == 0, applied.stderr
        assert "customresourcedefinition.apiextensions.k8s.io/observabilityaddons" in (
            applied.stdout
        )
        bogus = tmp_path / "bogus.yaml"
        bogus.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b, namespace: "
                         "default}\nbogus: 1\n", "utf-8")  # fmt: skip
        refused = kubectl(spoke.url, "apply", "-f", str(bogus))
        assert refused.returncode != 0
        assert 'strict decoding error: unknown field "bogus"' in refused.stderr
