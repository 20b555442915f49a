"""The sort op family (filled in by its own change)."""

from __future__ import annotations

__all__: list = []

TENSOR_METHODS: dict = {}
