"""A shared `__repr__` (`Name(field=value, ...)`, as attrs writes it) that the model clients' attrs
classes in `providers/` still derive from; the rest of the package lets attrs write its own. It goes
with them: it saved too little of a host's first answer to keep (a start-up trick).
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
    """Base of a class that takes `fields_repr` for its `__repr__`."""

    __slots__ = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "__repr__" not in cls.__dict__:  # a class's own repr wins, as with attrs
            cls.__repr__ = fields_repr  # type: ignore[method-assign]
