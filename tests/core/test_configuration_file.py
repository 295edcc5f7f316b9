"""The configuration file of `run --config` (statemachines.config_file): it loads resources,
per-collector settings and relatedObjects; a mistake is one line naming the file, the path in
it and what is wrong; the objects it watches are listed as relatedObjects name them."""

from __future__ import annotations

import pytest

from statemachines.config_file import guess_plural, load_configuration, resource_objects
from statemachines.errors import ConfigError

GOOD = """
collectorSettings:
  uwl-metrics-collector: {degradeAfter: 5m}
resources:
  - name: cert
    object: {apiVersion: cert-manager.io/v1, kind: Certificate, name: app-certificate}
    healthRule: {singleConditionType: Ready}
  - name: config
    collector: metrics-collector
    object: {apiVersion: v1, kind: ConfigMap, name: settings, namespace: other}
    healthRule: {alwaysHealthy: {}}
relatedObjects:
  - {group: apps, resource: deployments, name: metrics-collector-deployment}
"""


def test_a_configuration_file_loads_resources_settings_and_related_objects() -> None:
    config, shape = load_configuration(GOOD, source="config.yaml", namespace="addons")
    assert [r.name for r in config.resources] == ["cert", "config"]
    assert config.settings["uwl-metrics-collector"].degrade_after.total_seconds() == 300
    assert shape.related_objects[0].resource == "deployments"
    assert resource_objects(config) == [
        {
            "group": "cert-manager.io",
            "resource": "certificates",
            "namespace": "addons",
            "name": "app-certificate",
        },
        {"group": "", "resource": "configmaps", "namespace": "other", "name": "settings"},
    ]


def test_the_watched_objects_and_the_files_are_related_objects_in_that_order() -> None:
    config, _ = load_configuration(GOOD, source="config.yaml", namespace="addons")
    assert [o.to_api() for o in config.related_objects] == [
        *resource_objects(config),
        {
            "group": "apps",
            "resource": "deployments",
            "namespace": "addons",
            "name": "metrics-collector-deployment",
        },
    ]


def test_an_empty_configuration_file_configures_nothing() -> None:
    config, _ = load_configuration("", source="config.yaml", namespace="addons")
    assert config.resources == ()


RESOURCE = "resources:\n  - name: cert\n    object: {apiVersion: v1, kind: Secret, name: s}\n"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param(
            RESOURCE + "    healthRule: {alwaysHealthy: {}, singleConditionType: Ready}\n",
            "config.yaml: resources[0] (cert).healthRule: exactly one of alwaysHealthy,"
            " singleConditionType, multiMatch and cel is needed; got alwaysHealthy,"
            " singleConditionType",
            id="two-rules-in-one-resource",
        ),
        pytest.param(
            RESOURCE + "    healthRule: {multiMatch: {healthy: {matchFields: [{key: a, operator:"
            " Near}]}, unhealthy: {matchConditions: [{type: A, status: 'False'}]}}}\n",
            "config.yaml: resources[0] (cert).healthRule.multiMatch.healthy.matchFields[0]"
            ".operator: ",
            id="unknown-operator",
        ),
        pytest.param(
            RESOURCE
            + "    healthRule: {alwaysHealthy: {}}\n"
            + RESOURCE.split("\n", 1)[1]
            + "    healthRule: {alwaysHealthy: {}}\n",
            "config.yaml: resources[1].name: 'cert' is already resources[0]",
            id="duplicate-name",
        ),
        pytest.param(
            RESOURCE + "    collector: nobody\n    healthRule: {alwaysHealthy: {}}\n",
            "config.yaml: resources[0] (cert).collector: 'nobody' is not a configured collector",
            id="collector-not-configured",
        ),
        pytest.param(
            RESOURCE + "    for: soon\n    healthRule: {alwaysHealthy: {}}\n",
            "config.yaml: resources[0] (cert).for: ",
            id="for-not-a-duration",
        ),
        pytest.param(
            RESOURCE + "    healthRule: {multiMatch: {healthy: {matchFields: [{key: a, operator:"
            " In}]}, unhealthy: {matchConditions: [{type: A, status: 'False'}]}}}\n",
            "config.yaml: resources[0] (cert).healthRule.multiMatch.healthy.matchFields[0]:"
            " operator In needs a non-empty `values`",
            id="in-without-values",
        ),
        pytest.param(
            RESOURCE + "    healthRule: {cel: {current: 'isReady(status)'}}\n",
            "config.yaml: resources[0] (cert).healthRule.cel.current: CEL 'isReady(status)'"
            " does not compile",
            id="expression-that-does-not-compile",
        ),
        pytest.param("resourcez: []\n", "config.yaml: resourcez: unknown key", id="unknown-key"),
        pytest.param(
            "relatedObjects: [{group: apps, resource: deployments}]\n",
            "config.yaml: relatedObjects[0].name: required",
            id="related-object-without-name",
        ),
        pytest.param("resources: [\n", "config.yaml: line 2, column 1: not valid YAML", id="yaml"),
        pytest.param(
            "profile: acm\n",
            "config.yaml: profile: 'acm', but the controller runs the 'seed' profile (--profile)",
            id="profile-other-than-the-flags",
        ),
    ],
)
def test_a_mistake_names_the_file_the_path_and_what_is_wrong(text: str, message: str) -> None:
    with pytest.raises(ConfigError) as raised:
        load_configuration(text, source="config.yaml", namespace="addons")
    assert str(raised.value).startswith(message), str(raised.value)
    assert "\n" not in str(raised.value)


@pytest.mark.parametrize(
    ("kind", "plural"),
    [
        ("Deployment", "deployments"),
        ("ConfigMap", "configmaps"),
        ("Ingress", "ingresses"),
        ("NetworkPolicy", "networkpolicies"),
        ("Gateway", "gateways"),
    ],
)
def test_plural_is_the_one_the_api_server_guesses_for_a_kind(kind: str, plural: str) -> None:
    assert guess_plural(kind) == plural
