"""The one `__repr__` of every attrs class of the package: `Name(field=value, ...)`, as attrs writes it.

attrs generates, compiles and evaluates a `__repr__` for each class it decorates, ~40% of the cost of
making one class (measured: 0.54 -> 0.34 ms a class), and a host makes over a hundred such classes
before it answers its first editor: 20-30 ms of a first start (the host's CPU, A/B). Deriving from
`FieldRepr` gives a class this shared `__repr__` instead; `attrs.define` and `attrs.frozen` then leave
it alone (they detect a class's own `__repr__`), so the decorators stay as they are and attrs' typing
plugin keeps seeing them.
"""

from __future__ import annotations

import reprlib
from typing import Any

from attrs import NOTHING


@reprlib.recursive_repr()
def fields_repr(self: Any) -> str:
    shown = []
    for field in type(self).__attrs_attrs__:
        if field.repr is False:
            continue
        value = getattr(self, field.name, NOTHING)  # a field without init may never be set
        shown.append(f"{field.name}={value!r}" if field.repr is True else f"{field.name}={field.repr(value)}")
    return f"{type(self).__qualname__}({', '.join(shown)})"


class FieldRepr:
    """Base of the package's attrs classes (tests/test_fieldrepr.py checks that every one derives from it)."""

    __slots__ = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "__repr__" not in cls.__dict__:  # a class's own repr wins, as with attrs
            cls.__repr__ = fields_repr  # type: ignore[method-assign]
