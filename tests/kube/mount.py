"""A Secret volume as the kubelet writes it (AtomicWriter): the visible file is a symlink
through `..data`, and an update swaps `..data` to a new timestamped directory in one rename.
Tests use it to rotate a hub kubeconfig the way a cluster does."""

from __future__ import annotations

import itertools
import os
from collections.abc import Mapping
from pathlib import Path

_counter = itertools.count(1)


class SecretMount:
    """`root/<key>` -> `root/..data/<key>` -> `root/..<n>/<key>`."""

    def __init__(self, root: Path, key: str = "kubeconfig") -> None:
        self.root, self.key = root, key
        root.mkdir(parents=True, exist_ok=True)

    @property
    def path(self) -> Path:
        return self.root / self.key

    def write(self, content: str) -> None:
        self.write_keys({self.key: content.encode()})

    def write_keys(self, keys: Mapping[str, bytes]) -> None:
        """Every key of the Secret at once, in one swap of `..data` (a rotated client
        certificate and its key arrive together)."""
        version = self.root / f"..{next(_counter)}"
        version.mkdir()
        for key, data in keys.items():
            (version / key).write_bytes(data)
        staging = self.root / "..data_tmp"
        staging.symlink_to(version.name)
        os.replace(staging, self.root / "..data")
        for key in keys:
            if not (self.root / key).is_symlink():
                (self.root / key).symlink_to(Path("..data") / key)
