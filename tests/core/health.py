"""Shared helpers of the health-rule tests: configured resources and the objects of the seeds
(Cartographer's kapp App and Service, Flux RFC-0009's cert-manager Certificate), as the API
server returns them. Core only: plain dicts, no client."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from statemachines.health.resources import Resource, load_resources
from tests.names import MC, UWL
from tests.support import condition

__all__ = [
    "CERTIFICATE_RULE",
    "COLLECTORS",
    "KAPP_RULE",
    "MC",
    "MIN",
    "T0",
    "UWL",
    "certificate",
    "kapp_app",
    "resource",
]

T0 = datetime(2025, 1, 1, 12, 0, 0, tzinfo=UTC)
MIN = timedelta(minutes=1)
COLLECTORS = (MC, UWL)

# Flux RFC-0009's cert-manager Certificate, word for word.
CERTIFICATE_RULE = {
    "cel": {
        "inProgress": "status.conditions.filter(e, e.type == 'Issuing').all(e,"
        " e.observedGeneration == metadata.generation && e.status == 'True')",
        "failed": "status.conditions.filter(e, e.type == 'Ready').all(e,"
        " e.observedGeneration == metadata.generation && e.status == 'False')",
        "current": "status.conditions.filter(e, e.type == 'Ready').all(e,"
        " e.observedGeneration == metadata.generation && e.status == 'True')",
    }
}

# Cartographer's `deploy` ClusterTemplate (a kapp App), word for word.
KAPP_RULE = {
    "multiMatch": {
        "healthy": {"matchConditions": [{"type": "ReconcileSucceeded", "status": "True"}]},
        "unhealthy": {
            "matchFields": [
                {
                    "key": 'status.conditions[?(@.type=="ReconcileFailed")].status',
                    "operator": "In",
                    "values": ["True"],
                    "messagePath": ".status.usefulErrorMessage",
                }
            ]
        },
    }
}


def resource(
    rule: dict[str, Any],
    *,
    name: str = "watched",
    collector: str | None = None,
    for_: str = "0s",
    kind: str = "Deployment",
) -> Resource:
    raw: dict[str, Any] = {
        "name": name,
        "object": {"apiVersion": "v1", "kind": kind, "name": name},
        "for": for_,
        "healthRule": rule,
    }
    if collector is not None:
        raw["collector"] = collector
    return load_resources([raw], namespace="observability", collectors=COLLECTORS)[0]


def certificate(
    *, generation: int = 1, ready: str | None = None, issuing: str | None = None, **status: Any
) -> dict[str, Any]:
    conditions = []
    if issuing is not None:
        conditions.append(condition("Issuing", issuing, observedGeneration=generation))
    if ready is not None:
        conditions.append(condition("Ready", ready, observedGeneration=generation))
    return {
        "apiVersion": "cert-manager.io/v1",
        "kind": "Certificate",
        "metadata": {"name": "app-certificate", "generation": generation},
        "spec": {"secretName": "app-tls-certs"},
        "status": {"conditions": conditions, **status},
    }


def kapp_app(*conditions: dict[str, Any], **status: Any) -> dict[str, Any]:
    return {
        "apiVersion": "kappctrl.k14s.io/v1alpha1",
        "kind": "App",
        "metadata": {"name": "deployer", "generation": 1},
        "status": {"conditions": list(conditions), **status},
    }
