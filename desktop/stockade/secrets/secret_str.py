"""A string wrapper whose repr, str and format never show the secret it holds."""

from __future__ import annotations

import hmac
from typing import NoReturn

_MASK = "SecretStr('**********')"


class SecretStr:
    """Holds a secret; only `reveal()` returns it, so accidental printing or logging is safe."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        """The secret itself; call only where it is sent to its one legitimate destination."""
        return self._value

    def __repr__(self) -> str:
        return _MASK

    def __str__(self) -> str:
        return _MASK

    def __format__(self, spec: str) -> str:
        return _MASK

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, SecretStr):
            return NotImplemented
        return hmac.compare_digest(self._value.encode(), other._value.encode())

    __hash__ = None  # type: ignore[assignment]  # mutable-free but deliberately unhashable

    def __bool__(self) -> bool:
        return bool(self._value)

    def __reduce__(self) -> NoReturn:
        raise TypeError("secrets cannot be pickled or copied out of the process")
