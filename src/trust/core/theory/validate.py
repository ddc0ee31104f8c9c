"""Checks of model parameters: every failure is a `ParameterError` naming the parameter and its domain."""

from __future__ import annotations

import math
from numbers import Integral, Real

from trust.errors import ParameterError

__all__ = ["integer_at_least", "open_unit", "positive", "probability", "real", "tau_value"]


def real(name: str, value: object) -> float:
    """`value` as a finite float (a bool is not a number here)."""
    if isinstance(value, bool) or not isinstance(value, Real):
        raise ParameterError(f"{name} = {value!r}: expected a number")
    number = float(value)
    if not math.isfinite(number):
        raise ParameterError(f"{name} = {value!r}: must be a finite number")
    return number


def probability(name: str, value: object) -> float:
    number = real(name, value)
    if not 0.0 <= number <= 1.0:
        raise ParameterError(f"{name} = {value!r}: a probability must be in [0, 1]")
    return number


def open_unit(name: str, value: object) -> float:
    """A number in the open interval (0, 1), as beta and delta are."""
    number = real(name, value)
    if not 0.0 < number < 1.0:
        raise ParameterError(f"{name} = {value!r}: must be in (0, 1)")
    return number


def tau_value(name: str, value: object) -> float:
    """The vote threshold tau, in (0, 1]."""
    number = real(name, value)
    if not 0.0 < number <= 1.0:
        raise ParameterError(f"{name} = {value!r}: must be in (0, 1]")
    return number


def positive(name: str, value: object) -> float:
    number = real(name, value)
    if number <= 0:
        raise ParameterError(f"{name} = {value!r}: must be positive")
    return number


def integer_at_least(name: str, value: object, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, Integral):
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        else:
            raise ParameterError(f"{name} = {value!r}: expected an integer")
    number = int(value)
    if number < minimum:
        raise ParameterError(f"{name} = {value!r}: must be at least {minimum}")
    return number
