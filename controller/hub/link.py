"""The console's link from a cluster's addon to its dashboard (docs/spec.md §12.4): the ACM console
shows a link on the addon's row when the `ManagedClusterAddOn` carries both launch-link
annotations. With `hub --console-link URL` the hub side keeps them on each one (`{cluster}` in
the URL is the cluster's name), beside a third that marks them as its own: written once,
rewritten only when the link changes, and removed — only its own — when the flag is dropped.

Pure: `link_patch` is the metadata merge patch to send, or None when nothing is to change.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import quote

from controller.hub.caches import LINK, LINK_OWNER, LINK_TEXT

__all__ = ["ConsoleLink", "link_patch"]

OURS: Final = "addon-status-hub"


@dataclass(frozen=True, slots=True)
class ConsoleLink:
    """The URL template (empty: no link) and the link's text."""

    url: str = ""
    text: str = "Metrics dashboard"

    def annotations(self, cluster: str) -> dict[str, str]:
        if not self.url:
            return {}
        return {LINK: self.url.replace("{cluster}", quote(cluster, safe="")), LINK_TEXT: self.text,
                LINK_OWNER: OURS}  # fmt: skip


def link_patch(
    link: ConsoleLink, cluster: str, annotations: Mapping[str, str]
) -> dict[str, Any] | None:
    """The `metadata.annotations` merge patch that makes `annotations` (the
    ManagedClusterAddOn's link annotations) carry `link`; None when they already do. Someone
    else's link (no mark of ours) is left alone."""
    wanted = link.annotations(cluster)
    ours = annotations.get(LINK_OWNER) == OURS
    if not wanted:
        if not ours:
            return None
        return {"metadata": {"annotations": {k: None for k in (LINK, LINK_TEXT, LINK_OWNER)}}}
    if not ours and (LINK in annotations or LINK_TEXT in annotations):
        return None  # an administrator's link on this cluster wins
    if all(annotations.get(k) == v for k, v in wanted.items()):
        return None
    return {"metadata": {"annotations": wanted}}
