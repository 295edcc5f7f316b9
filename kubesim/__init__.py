"""A strict, embeddable Kubernetes API server with kube-apiserver's semantics for what it
serves (the project's CRDs, Namespaces, Events, Leases, TokenReviews): what the integration
tests and the demo run the controller against, since no real kube-apiserver installs here."""

from kubesim.access import POD_NAME, WRITE_VERBS, AuditRecord, UserInfo
from kubesim.errors import APIError
from kubesim.faults import Faults, Matcher
from kubesim.resources import CRDError, ResourceType, load_crds
from kubesim.routing import RequestInfo
from kubesim.server import DEFAULT_NAMESPACES, APIServer
from kubesim.transport import ServingTLS

__all__ = [
    "DEFAULT_NAMESPACES",
    "POD_NAME",
    "WRITE_VERBS",
    "APIError",
    "APIServer",
    "AuditRecord",
    "CRDError",
    "Faults",
    "Matcher",
    "RequestInfo",
    "ResourceType",
    "ServingTLS",
    "UserInfo",
    "load_crds",
]
