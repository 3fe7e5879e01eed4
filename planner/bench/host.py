"""Facts about the machine the benchmark runs on: CPU name, usable cores,
last-level cache, RAM; the GPU-name → hardware-profile match.

Read at call time only (never at import).  Sources: Linux sysfs
(``/sys/devices/system/cpu/cpu0/cache/index*/{level,type,size}``), ``lscpu``
as a fallback, ``/proc/cpuinfo`` for the model name.
"""

from __future__ import annotations

import os
import platform
import re
import subprocess
from pathlib import Path

from planner.units import GiB, KiB, MiB

CACHE_DIR = Path("/sys/devices/system/cpu/cpu0/cache")
_SIZE_UNITS = {"": 1, "K": KiB, "M": MiB, "G": GiB}

#: datasheet profile for a ``torch.cuda.get_device_name()`` string, first match wins.
#: Only variants whose datasheet figures equal a shipped profile are matched (an
#: A100 PCIe has other bandwidth than the SXM profiles, so it matches nothing).
GPU_NAME_PATTERNS: tuple[tuple[str, str], ...] = (
    (r"\bH200\b(?!.*\bNVL\b)", "h200"),  # H200 NVL has lower peaks
    (r"\bH100\b.*\bPCIe\b", "h100-pcie"),
    (r"\bH100\b.*(SXM|HBM3)", "h100-sxm"),
    (r"\bA100\b.*SXM.*80\s?GB", "a100-80gb-sxm"),
    (r"\bA100\b.*SXM.*40\s?GB", "a100-40gb-sxm"),
    (r"\bB200\b", "b200"),
    (r"\bL40S\b", "l40s"),
    (r"\bL4\b", "l4"),
    (r"\bMI300X\b", "mi300x"),
    (r"\bMI325X\b", "mi325x"),
)


def parse_size_bytes(text: str) -> float | None:
    """``"32768K"`` → 33554432; ``"32 MiB"`` → 33554432; None if unreadable."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([KMG]?)(?:i?B)?\s*", text, flags=re.IGNORECASE)
    if not m:
        return None
    return float(m.group(1)) * _SIZE_UNITS[m.group(2).upper()]


def llc_bytes_from_sysfs(cache_dir: Path = CACHE_DIR) -> float | None:
    """Size of the highest-level data/unified cache listed for cpu0."""
    best: tuple[int, float] | None = None
    for index in sorted(cache_dir.glob("index*")):
        try:
            level = int((index / "level").read_text().strip())
            kind = (index / "type").read_text().strip()
            size = parse_size_bytes((index / "size").read_text())
        except (OSError, ValueError):
            continue
        if kind == "Instruction" or size is None:
            continue
        if best is None or level > best[0]:
            best = (level, size)
    return None if best is None else best[1]


def llc_bytes_from_lscpu() -> float | None:
    """Largest ``L<n> cache`` line of ``lscpu`` (per instance when it says so)."""
    try:
        text = subprocess.run(["lscpu"], capture_output=True, text=True, timeout=10, check=False).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    best = None
    for m in re.finditer(r"^L(\d)\S* cache:\s+(\d+(?:\.\d+)?\s*[KMG]i?B?)(?:\s*\((\d+) instances?\))?", text, re.M):
        size = parse_size_bytes(m.group(2))
        if size is None:
            continue
        if m.group(3):
            size /= int(m.group(3))
        if best is None or int(m.group(1)) > best[0]:
            best = (int(m.group(1)), size)
    return None if best is None else best[1]


def llc_bytes() -> float | None:
    """Last-level cache size in bytes (sysfs, else lscpu); None if neither says."""
    return llc_bytes_from_sysfs() or llc_bytes_from_lscpu()


def usable_cores() -> int:
    """CPUs this process may run on (the affinity mask, not the machine's count)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def cpu_model_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "CPU"


def host_memory_bytes() -> float:
    return float(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))


def host_name() -> str:
    return platform.node() or "unknown host"


def kvplan_version() -> str:
    """kvplan's version: the installed distribution's, else the checkout's pyproject.toml, else "0"."""
    from importlib import metadata

    try:
        return metadata.version("kvplan")
    except metadata.PackageNotFoundError:
        pass
    import tomllib

    try:
        data = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text(encoding="utf-8"))
        return str(data["project"]["version"])
    except (OSError, KeyError, tomllib.TOMLDecodeError):
        return "0"


def slug(text: str, max_len: int = 48) -> str:
    """Lower-case file-stem form: ``"AMD EPYC (2 cores)"`` → ``"amd-epyc-2-cores"``."""
    s = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    return s[:max_len].rstrip("-") or "device"


def match_profile_key(device_name: str, available: set[str] | frozenset[str]) -> str | None:
    """The shipped hardware profile a GPU's reported name corresponds to, if any."""
    for pattern, key in GPU_NAME_PATTERNS:
        if re.search(pattern, device_name, flags=re.IGNORECASE) and key in available:
            return key
    return None
