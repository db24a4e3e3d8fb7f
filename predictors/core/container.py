"""Placeholder; replaced below."""

from __future__ import annotations

import shutil


class ContainerRunner:
    name = "container-podman"

    @staticmethod
    def available() -> bool:
        return shutil.which("podman") is not None
