"""The report API's serving certificate in the manifests: `run` gets both TLS flags, they point
at the keys of the Secret `addon-status-serving-cert` mounted read-only (without subPath, so
that rotations reach the pod), and the reports Service asks OpenShift's service CA to issue
that Secret."""

from __future__ import annotations

from pathlib import Path, PurePosixPath
from typing import Any, Final

from tests.manifests.kustomize import find
from tests.manifests.pod import flag_value, options_of

Obj = dict[str, Any]
SERVING_SECRET: Final = "addon-status-serving-cert"
MOUNT: Final = PurePosixPath("/var/run/secrets/serving-cert")


def test_run_serves_https_with_the_mounted_certificate(
    spoke: list[Obj], deployment: Obj, tmp_path: Path
) -> None:
    options = options_of(spoke, deployment, files=tmp_path)
    assert options.tls_cert_file is not None and options.tls_cert_file.name == "tls.crt"
    assert options.tls_key_file is not None and options.tls_key_file.name == "tls.key"
    assert options.insecure is False


def test_the_tls_flags_name_the_keys_of_the_serving_cert_secret(container: Obj, pod: Obj) -> None:
    files = {
        flag: PurePosixPath(flag_value(container, flag))
        for flag in ("--tls-cert-file", "--tls-key-file")
    }
    assert {f.parent for f in files.values()} == {MOUNT}
    [mount] = [m for m in container["volumeMounts"] if PurePosixPath(m["mountPath"]) == MOUNT]
    assert mount["readOnly"] is True
    assert "subPath" not in mount  # a subPath file is never updated on rotation
    volume = next(v for v in pod["volumes"] if v["name"] == mount["name"])
    assert volume["secret"]["secretName"] == SERVING_SECRET
    keys = {item["key"]: item["path"] for item in volume["secret"]["items"]}
    assert keys == {"tls.crt": "tls.crt", "tls.key": "tls.key"}  # the kubernetes.io/tls keys
    assert {files["--tls-cert-file"].name, files["--tls-key-file"].name} == set(keys.values())


def test_the_reports_service_asks_for_the_serving_cert(spoke: list[Obj]) -> None:
    service = find(spoke, "Service", "addon-status-reports")
    annotations = service["metadata"]["annotations"]
    assert annotations["service.beta.openshift.io/serving-cert-secret-name"] == SERVING_SECRET
    assert [p["appProtocol"] for p in service["spec"]["ports"]] == ["https"]
