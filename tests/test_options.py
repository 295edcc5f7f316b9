"""The settings of `run`: flags over `ADDON_STATUS_*` over defaults, and every mistake one line
that names the flag and the variable."""

from __future__ import annotations

import argparse
from datetime import timedelta
from pathlib import Path

import pytest

from controller.spoke.options import (
    DEFAULT_NAME,
    DEFAULT_NAMESPACE,
    OptionsError,
    RunOptions,
    add_run_flags,
)
from tests.support import run_options


def test_defaults() -> None:
    o = run_options([])
    assert (o.addon_name, o.addon_namespace, o.kubeconfig) == (
        DEFAULT_NAME,
        DEFAULT_NAMESPACE,
        None,
    )
    assert (o.metrics_address.port, o.probe_address.port) == (8080, 8081)
    settings = o.config().settings["metrics-collector"]
    assert settings.degrade_after == timedelta(minutes=10)


def test_a_flag_wins_over_its_variable_which_wins_over_the_default() -> None:
    env = {"ADDON_STATUS_DEGRADE_AFTER": "5m", "ADDON_STATUS_ADDON_NAME": "from-env"}
    o = run_options(["--degrade-after", "2m"], env)
    assert o.degrade_after == timedelta(minutes=2)
    assert o.addon_name == "from-env"


def test_the_history_limit_is_the_addons_setting() -> None:
    assert run_options([]).config().history_limit == 10
    assert run_options(["--history-limit", "0"]).config().history_limit == 0
    assert run_options([], {"ADDON_STATUS_HISTORY_LIMIT": "3"}).config().history_limit == 3


def test_collectors_and_addresses_are_parsed() -> None:
    o = run_options(["--collectors", "metrics-collector", "--probe-address", "127.0.0.1:0"])
    assert [c.name for c in o.config().collectors] == ["metrics-collector"]
    assert (o.probe_address.host, o.probe_address.port) == ("127.0.0.1", 0)


def test_a_kubeconfig_from_the_flag_or_kubeconfig(tmp_path: Path) -> None:
    path = tmp_path / "config"
    path.write_text("apiVersion: v1\n")
    assert run_options(["--kubeconfig", str(path)]).kubeconfig == path
    assert run_options([], {"KUBECONFIG": str(path)}).kubeconfig == path
    gone = tmp_path / "gone"
    listed = run_options([], {"KUBECONFIG": f"{path}:{gone}:{path}"}).kubeconfig
    assert listed == (path, gone)  # kubectl's list, merged by the loader; one that exists is enough
    with pytest.raises(OptionsError, match=f"kubeconfig {gone}:{tmp_path / 'x'}: no such file"):
        run_options([], {"KUBECONFIG": f"{gone}:{tmp_path / 'x'}"})


@pytest.mark.parametrize(
    ("argv", "environ", "message"),
    [
        pytest.param(
            [],
            {"ADDON_STATUS_DEGRADE_AFTER": "soon"},
            "--degrade-after / ADDON_STATUS_DEGRADE_AFTER: 'soon' is not a duration",
            id="a-bad-duration",
        ),
        pytest.param(
            ["--collectors", "nope"],
            {},
            "--collectors / ADDON_STATUS_COLLECTORS: collectors: unknown collector 'nope'",
            id="an-unknown-collector",
        ),
        pytest.param(
            ["--metrics-address", "8080"],
            {},
            "--metrics-address / ADDON_STATUS_METRICS_ADDRESS: '8080' is not host:port",
            id="an-address-without-port",
        ),
        pytest.param(
            ["--kubeconfig", "/no/such/kubeconfig"],
            {},
            "kubeconfig /no/such/kubeconfig: no such file",
            id="a-missing-kubeconfig",
        ),
        pytest.param(
            ["--report-interval", "0s"], {}, "reportInterval must be positive", id="a-zero-interval"
        ),
        pytest.param(
            ["--history-limit", "-1"],
            {},
            "--history-limit / ADDON_STATUS_HISTORY_LIMIT:",
            id="a-negative-history-limit",
        ),
        pytest.param(
            ["--log-level", "loud"], {}, "--log-level / ADDON_STATUS_LOG_LEVEL:", id="a-bad-level"
        ),
    ],
)
def test_mistakes_are_one_line_naming_the_option(
    argv: list[str], environ: dict[str, str], message: str
) -> None:
    with pytest.raises(OptionsError) as caught:
        run_options(argv, environ)
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)


def test_outside_a_cluster_without_a_kubeconfig_says_so(tmp_path: Path) -> None:
    parser = argparse.ArgumentParser()
    add_run_flags(parser)
    with pytest.raises(OptionsError, match="no kubeconfig: pass --kubeconfig"):
        RunOptions.from_args(parser.parse_args([]), {"HOME": str(tmp_path)})


def test_a_configuration_file_adds_resources_and_collector_settings(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(
        "collectorSettings: {uwl-metrics-collector: {degradeAfter: 5m}}\n"
        "resources:\n"
        "  - name: collector\n"
        "    object: {apiVersion: apps/v1, kind: Deployment, name: metrics-collector}\n"
        "    healthRule: {singleConditionType: Available}\n"
    )
    config = run_options(["--config", str(path), "--degrade-after", "2m"]).config()
    [resource] = config.resources
    assert resource.object.namespace == DEFAULT_NAMESPACE
    assert config.settings["uwl-metrics-collector"].degrade_after == timedelta(minutes=5)
    assert config.settings["metrics-collector"].degrade_after == timedelta(minutes=2)


def test_a_bad_configuration_file_stops_the_start_naming_file_and_path(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text("resources:\n  - name: Not A Label\n")
    with pytest.raises(OptionsError) as raised:
        run_options(["--config", str(path)])
    assert str(raised.value).startswith(f"{path}: resources[0] (Not A Label).name: ")
    with pytest.raises(OptionsError, match=r"--config / ADDON_STATUS_CONFIG: .*missing.yaml"):
        run_options([], {"ADDON_STATUS_CONFIG": str(tmp_path / "missing.yaml")})


def test_the_profile_is_chosen_by_flag_or_variable() -> None:
    """`--profile acm` (docs/spec.md §11): the core's configuration writes the acm names."""
    from statemachines.vocabulary import ACM, SEED

    assert run_options([]).config().profile is SEED
    assert run_options(["--profile", "acm"]).config().profile is ACM
    assert run_options([], {"ADDON_STATUS_PROFILE": "acm"}).config().profile is ACM


def test_an_unknown_profile_is_one_line_naming_the_flag() -> None:
    with pytest.raises(OptionsError) as error:
        run_options(["--profile", "ocm"])
    assert str(error.value).startswith("--profile / ADDON_STATUS_PROFILE: ")
    assert "'seed' or 'acm'" in str(error.value)
