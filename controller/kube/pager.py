"""A whole list, a page at a time, as client-go's pager reads one: `limit` items per request,
the next page asked with the server's `continue` token, each page decoded (into what the reader
keeps) and dropped before the next. The pages are one consistent list, at the first page's
resourceVersion; when that version leaves the server's history before the last page (410 Gone
on a continue), the list starts again from its first page.

A server is not trusted to end its chain: the pages, and the bytes they take on the wire, are
bounded, and a chain past either bound fails the list in one line.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Generic, TypeVar

from controller.kube.api import ApiResource, GoneError, Keep, Kube, KubeError
from controller.kube.reads import Reads

__all__ = ["PAGE", "Listing", "list_all"]

T = TypeVar("T")

PAGE: Final = 500
"""Items per page: kubectl's `--chunk-size` and client-go's pager default."""
MAX_PAGES: Final = 1000
"""500,000 objects: fifty times the largest fleet the project is measured at."""
MAX_BYTES: Final = 4 << 30
"""What a chain may take on the wire in all (each page alone is bounded by the seam)."""
RESTARTS: Final = 3


@dataclass(frozen=True, slots=True)
class Listing(Generic[T]):
    """What was kept of every item, in order; the list's resourceVersion; the pages asked."""

    items: list[T]
    resource_version: str
    pages: int


def list_all(
    kube: Kube,
    resource: ApiResource,
    namespace: str,
    *,
    keep: Keep[T],
    field_selector: str = "",
    label_selector: str = "",
    page: int = PAGE,
    reads: Reads = "object",
    max_pages: int = MAX_PAGES,
    max_bytes: int = MAX_BYTES,
) -> Listing[T]:
    """What `keep` kept of every object `kube` lists. Raises KubeError (GoneError when each
    of the restarts met a 410 too)."""
    for restart in range(RESTARTS + 1):
        items: list[T] = []
        token, pages, size = "", 0, 0
        try:
            while True:
                got = kube.list(
                    resource, namespace, keep=keep, field_selector=field_selector,
                    label_selector=label_selector, limit=page, continue_token=token,
                    reads=reads,
                )  # fmt: skip
                pages, size = pages + 1, size + got.size
                items += got.items
                token = got.continue_token
                if not token:
                    return Listing(items, got.resource_version, pages)
                if pages >= max_pages or size > max_bytes:
                    raise KubeError(
                        f"list {resource.kind} in {namespace or 'every namespace'}: the server's "
                        f"continue chain went past {pages} pages and {size:,} bytes; stopped"
                    )
        except GoneError:
            if not token or restart == RESTARTS:
                raise
    raise AssertionError("unreachable")  # pragma: no cover
