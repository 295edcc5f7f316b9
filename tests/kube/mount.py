"""A Secret volume as the kubelet writes it (AtomicWriter): the visible file is a symlink
through `..data`, and an update swaps `..data` to a new timestamped directory in one rename.
Tests use it to rotate a hub kubeconfig the way a cluster does."""

from __future__ import annotations

import itertools
import os
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
        version = self.root / f"..{next(_counter)}"
        version.mkdir()
        (version / self.key).write_text(content, encoding="utf-8")
        staging = self.root / "..data_tmp"
        staging.symlink_to(version.name)
        os.replace(staging, self.root / "..data")
        if not self.path.is_symlink():
            self.path.symlink_to(Path("..data") / self.key)
