"""Reverse-mode automatic differentiation: the Function base, the engine and grad modes."""

from . import functional, graph
from .engine import backward, grad
from .function import Function, FunctionCtx, once_differentiable
from .grad_mode import (
                        detect_anomaly,
                        enable_grad,
                        inference_mode,
                        is_anomaly_check_nan_enabled,
                        is_anomaly_enabled,
                        is_grad_enabled,
                        no_grad,
                        set_detect_anomaly,
                        set_grad_enabled,
)

__all__ = ["Function", "FunctionCtx", "once_differentiable", "backward", "grad", "functional",
           "graph",
           "no_grad", "enable_grad", "set_grad_enabled", "inference_mode", "is_grad_enabled",
           "detect_anomaly", "set_detect_anomaly", "is_anomaly_enabled",
           "is_anomaly_check_nan_enabled"]
