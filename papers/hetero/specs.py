"""'name' or 'name:count' items of the command-line specs (vendor maps, link kinds).

Paper: Hu et al., "Joint Training on AMD and NVIDIA GPUs", https://arxiv.org/abs/2602.18007
"""
from __future__ import annotations

from common.errors import UserError


def name_count(item: str, choices, what: str, example: str) -> tuple[str, int]:
    """'nv:2' -> ('nv', 2), 'nv' -> ('nv', 1); an unknown name or a count that is not an integer >= 1
    is a one-line UserError naming `what` and a correct `example`."""
    name, _, count = str(item).strip().partition(":")
    if name not in choices:
        raise UserError(f"unknown {what} {name!r}; choose one of {', '.join(choices)} (e.g. {example})")
    try:
        n = int(count) if count else 1
    except ValueError:
        n = 0
    if n < 1:
        raise UserError(f"bad count in {what} {item!r}: write name:k with an integer k >= 1, e.g. {example}")
    return name, n
