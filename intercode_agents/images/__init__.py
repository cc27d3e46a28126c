"""The sandbox images: the table in ``docker/images.yaml`` and an idempotent builder.

>>> image_ref("bash")
'intercode-agents/bash:latest'
"""

from __future__ import annotations

from intercode_agents.images.base_image import BOOTSTRAP_BASE, DEBIAN_BASE
from intercode_agents.images.builder import HASH_LABEL, BuildResult, build_images, copy_images, copy_refs
from intercode_agents.images.catalog import IMAGE_PREFIX, ImageSpec, image_ref, known_images, load_catalog

__all__ = [
    "BOOTSTRAP_BASE",
    "DEBIAN_BASE",
    "HASH_LABEL",
    "IMAGE_PREFIX",
    "BuildResult",
    "ImageSpec",
    "build_images",
    "copy_images",
    "copy_refs",
    "image_ref",
    "known_images",
    "load_catalog",
]
