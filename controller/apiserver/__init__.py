"""A strict, embeddable Kubernetes API server with kube-apiserver's semantics for what it
serves (the project's CRDs, Namespaces, Events, Leases, TokenReviews): what the integration
tests and the demo run the controller against, since no real kube-apiserver installs here."""

from controller.apiserver.access import WRITE_VERBS, AuditRecord, UserInfo
from controller.apiserver.errors import APIError
from controller.apiserver.faults import Faults, Matcher
from controller.apiserver.resources import CRDError, ResourceType, load_crds
from controller.apiserver.routing import RequestInfo
from controller.apiserver.server import DEFAULT_NAMESPACES, APIServer

__all__ = [
    "DEFAULT_NAMESPACES",
    "WRITE_VERBS",
    "APIError",
    "APIServer",
    "AuditRecord",
    "CRDError",
    "Faults",
    "Matcher",
    "RequestInfo",
    "ResourceType",
    "UserInfo",
    "load_crds",
]
