"""Container images: the engine's official image for the GPU's vendor, pinned to the engine release the plan
used, and the router image.  Pure data and one function each; every name and tag pattern with its source.

  vLLM, NVIDIA   vllm/vllm-openai:v{X.Y.Z}        ENTRYPOINT ["vllm", "serve"]
                 (vllm-project/vllm docs/deployment/docker.md: "available on Docker Hub as vllm/vllm-openai")
  vLLM, AMD      vllm/vllm-openai-rocm:v{X.Y.Z}   ENTRYPOINT ["vllm", "serve"]
                 (vllm-project/vllm@06d0369d docs/getting_started/installation/gpu.rocm.inc.md: "official Docker
                 images … vllm/vllm-openai-rocm"; AMD's rocm/vllm and rocm/vllm-dev "are deprecated in favor of"
                 it since January 20th, 2026)
  SGLang, NVIDIA lmsysorg/sglang:v{X.Y.Z}         (sgl-project/sglang docs/get-started/install.mdx: images on Docker
                 Hub at lmsysorg/sglang; CUDA 13 since v0.5.19 — v0.5.19-cu129 is the last CUDA 12 tag)
  SGLang, AMD    lmsysorg/sglang:v{X.Y.Z}-rocm700-mi30x (gfx942: MI300X, MI325X) or -rocm700-mi35x (gfx950:
                 MI350X, MI355X) (sgl-project/sglang@0221e896 .github/workflows/release-docker-amd.yml: tag
                 v${version}-${rocm_tag}; "the recommended variant (mi30x with rocm700)")
  router, vLLM   vllm/vllm-router:v0.1.17 — the vLLM Router (vllm-project/router; release tags v${VERSION},
                 .buildkite/scripts/publish-release-images.sh; PyPI vllm-router 0.1.17), entry point vllm-router
  router, SGLang the engine image itself: python3 -m sglang_router.launch_router (sgl-project/sglang docker/Dockerfile
                 "Build and install sgl-router")

The engine release: the ``version`` of the engine profile the plan selects (``engine=NAME@VERSION``; a name
alone is its newest; engine_profiles/NAME/VERSION.toml) when it names a release (X.Y.Z); a profile that names
only a series ("0.5") is pinned to the newest release of that series the launch writer's flags are checked
against (``CHECKED_RELEASE``).  ``pinned_release`` is the one place that reads it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from planner.errors import ProblemsError
from planner.model.engine_profile import EngineProfile
from planner.model.specs import GPU

#: The releases whose ``vllm serve`` / ``launch_server`` flags ``planner.launch.commands`` is checked against (each
#: version's flag table, engine_profiles/<engine>/<version>-flags.json), newest first.
CHECKED_RELEASE = {"vllm": ("0.33.0", "0.19.0"), "sglang": ("0.5.23",)}
#: The vLLM Router release (PyPI vllm-router; Docker Hub vllm/vllm-router:v…).
VLLM_ROUTER_RELEASE = "0.1.17"
#: AMD architecture generation → the SGLang ROCm image's GPU suffix (gfx942 = CDNA 3, gfx950 = CDNA 4).
SGLANG_ROCM_SUFFIX = {"CDNA 3": "rocm700-mi30x", "CDNA 4": "rocm700-mi35x"}
VENDORS = ("NVIDIA", "AMD")
#: X.Y.Z; the look-behind keeps a search linear on a long run of digits (each run is tried once, at its start).
_RELEASE = re.compile(r"(?<![0-9])[0-9]+\.[0-9]+\.[0-9]+")


class DeployError(ProblemsError):
    """A plan kvplan cannot write deployment files for; each problem names the field and the rule."""


@dataclass(frozen=True)
class Image:
    """An image reference and where its name and tag pattern come from."""

    ref: str
    source: str


def pinned_release(engine: str, profile: EngineProfile) -> str:
    """The engine release the images are pinned to (module doc)."""
    version = profile.version.removeprefix("v")
    if _RELEASE.fullmatch(version):
        return version
    checked = CHECKED_RELEASE[engine]
    for release in checked:
        if release == version or release.startswith(version + "."):
            return release
    raise DeployError(
        [
            f"engine profile {profile.name}: version {profile.version!r} is not a release (X.Y.Z) and the launch "
            f"flags were checked against {engine} {', '.join(checked)}; set version to the release you serve"
        ]
    )


def vendor_of(gpu: GPU) -> str:
    """The GPU's vendor as the images know it; DeployError for a measured machine or another vendor."""
    if gpu.calibrated or gpu.vendor not in VENDORS:
        raise DeployError(
            [
                f"gpu={gpu.key}: {gpu.name} ({gpu.vendor}) is not a GPU kvplan writes deployments for; "
                f"choose an {' or '.join(VENDORS)} GPU profile"
            ]
        )
    return gpu.vendor


def engine_image(engine: str, release: str, gpu: GPU) -> Image:
    """The engine's official image for ``gpu``'s vendor at ``release`` (module doc)."""
    vendor = vendor_of(gpu)
    if engine == "vllm":
        repo = "vllm/vllm-openai" if vendor == "NVIDIA" else "vllm/vllm-openai-rocm"
        where = "deployment/docker.md" if vendor == "NVIDIA" else "getting_started/installation/gpu.rocm.inc.md"
        return Image(f"{repo}:v{release}", f"vLLM's official image (vllm-project/vllm docs/{where})")
    if vendor == "NVIDIA":
        return Image(f"lmsysorg/sglang:v{release}", "SGLang's official image (sgl-project/sglang docs, install)")
    suffix = SGLANG_ROCM_SUFFIX.get(gpu.generation)
    if suffix is None:
        raise DeployError(
            [
                f"gpu={gpu.key}: SGLang publishes ROCm images for {', '.join(SGLANG_ROCM_SUFFIX)} only, not "
                f"{gpu.generation or 'an unnamed generation'}"
            ]
        )
    return Image(
        f"lmsysorg/sglang:v{release}-{suffix}",
        "SGLang's ROCm image (sgl-project/sglang .github/workflows/release-docker-amd.yml)",
    )


def router_image(engine: str, engine_ref: str) -> Image:
    """The router's image: the vLLM Router release, or SGLang's own image (it ships sglang_router)."""
    if engine == "vllm":
        return Image(
            f"vllm/vllm-router:v{VLLM_ROUTER_RELEASE}",
            "the vLLM Router (vllm-project/router .buildkite/scripts/publish-release-images.sh; PyPI vllm-router)",
        )
    return Image(engine_ref, "sglang_router, built into SGLang's image (sgl-project/sglang docker/Dockerfile)")
