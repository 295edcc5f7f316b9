"""The names of the objects the project reads and writes by default, declared once: every flag's
default, every process and command refers to these (docs/spec.md §7, §12; the manifests install
them under the same names; tests/test_names.py holds the code and the commands' defaults to
them).

Plain strings, light: `--help` of every command reads them."""

from __future__ import annotations

from typing import Final

__all__ = [
    "ACM_MANAGED_ADDON",
    "ADDON_CR",
    "ADDON_NAMESPACE",
    "COPY_NAMES",
    "HUB_SIDE",
    "MANAGED_ADDON",
    "OWN_ADDON_CR",
    "SHOWN_COPY_NAME",
    "SPOKE_LEASE",
]

ADDON_CR: Final = "observability-addon"
"""The addon CR of ACM's kind (ObservabilityAddon) on a spoke, and its hub copy's name."""
OWN_ADDON_CR: Final = "addon-status"
"""The addon CR of the project's own kind (AddonStatus, beside ACM's observability operator)."""
COPY_NAMES: Final = {"ObservabilityAddon": ADDON_CR, "AddonStatus": OWN_ADDON_CR}
"""The hub copies' name by their kind, as the rollouts name them."""
SHOWN_COPY_NAME: Final = f"{ADDON_CR}; with --addon-kind AddonStatus, {OWN_ADDON_CR}"
"""How `--help` shows the copies' name by default, where it follows `--addon-kind`."""
ADDON_NAMESPACE: Final = "open-cluster-management-addon-observability"
"""The addon CR's namespace on a spoke (and the agent's)."""
MANAGED_ADDON: Final = "addon-status"
"""The ClusterManagementAddOn, and each cluster's ManagedClusterAddOn OCM names after it."""
ACM_MANAGED_ADDON: Final = "observability-controller"
"""ACM's ManagedClusterAddOn the console reads for metrics collection (the hub side's on ACM)."""
SPOKE_LEASE: Final = "addon-status-controller"
"""The spoke controller's Deployment and the Lease of its election."""
HUB_SIDE: Final = "addon-status-hub-controller"
"""The hub side's Deployment, its ServiceAccount, the Lease of its election."""
