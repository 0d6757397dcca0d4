"""The shared `__repr__` the providers' attrs classes still derive from (openvaala_lsp/fieldrepr.py)."""

from __future__ import annotations

from typing import Any

import attrs

from openvaala_lsp.fieldrepr import FieldRepr


@attrs.define
class Node(FieldRepr):
    name: str
    children: list[Any] = attrs.Factory(list)
    secret: str = attrs.field(default="s3cret", repr=False)
    shout: str = attrs.field(default="hi", repr=lambda value: value.upper())
    later: int = attrs.field(init=False)


@attrs.frozen
class Own(FieldRepr):
    value: int

    def __repr__(self) -> str:
        return f"<own {self.value}>"


def test_fields_hidden_or_shown_their_own_way_a_cycle_and_an_unset_field() -> None:
    node = Node("root")
    node.children.append(node)
    assert repr(node) == "Node(name='root', children=[...], shout=HI, later=NOTHING)"
    node.later = 3
    assert repr(node).endswith("later=3)")


def test_a_class_of_its_own_keeps_its_repr_and_slots_stay() -> None:
    assert repr(Own(1)) == "<own 1>"
    assert not hasattr(Node("x"), "__dict__")  # the base adds no __dict__ to slotted classes
    assert Own(1) == Own(1) != Own(2)  # attrs still writes equality
