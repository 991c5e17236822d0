"""Building frozen slotted records in hot paths without their frozen constructors.

A frozen dataclass's `__init__` sets each field through `object.__setattr__`, and setting a
slot through its descriptor (`Cls.__dict__["x"].__set__(obj, v)`) still costs a call with an
argument tuple per field. A record built as its mutable twin (the same slots, no frozen
`__setattr__`) takes each field by plain assignment, and then becomes the frozen class by
`__class__` assignment, which CPython allows between classes of the same layout. The result
is exactly what the constructor builds: same class, same slot values (each builder has a
property test against its constructor).
"""

from __future__ import annotations

from typing import Any


def mutable_twin(cls: type) -> Any:
    """A class with exactly `cls`'s slots and nothing else: `twin()` makes an empty instance
    whose fields are set by assignment, after which `obj.__class__ = cls` makes it a `cls`.

    `cls` must derive from `object` alone and declare its fields in `__slots__` (no instance
    dict), so the two classes have the same layout."""
    slots = cls.__dict__.get("__slots__")
    if cls.__bases__ != (object,) or not isinstance(slots, tuple) or "__dict__" in slots:
        raise TypeError(f"{cls.__name__} is not a slotted record deriving from object")
    return type(f"_{cls.__name__}Fields", (), {"__slots__": slots, "__module__": cls.__module__})
