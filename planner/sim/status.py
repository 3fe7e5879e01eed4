"""What became of a simulated request: its status code, and the code's name in words."""

from __future__ import annotations

SERVED, REJECTED_CONTEXT, REJECTED_KV, NOT_RUN = 0, 1, 2, 3
STATUS_NAMES = {
    SERVED: "served",
    REJECTED_CONTEXT: "rejected: longer than the context window",
    REJECTED_KV: "rejected: larger than the KV cache",
    NOT_RUN: "not run (stopped early)",
}
