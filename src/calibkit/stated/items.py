"""A question to ask: the unit of elicitation (shared by the runner, the providers and the
elicitation loop)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Item"]


@dataclass(frozen=True)
class Item:
    id: str
    question: str
    options: tuple[str, ...]
