"""The shared `__repr__` of the package's attrs classes (openvaala_lsp/fieldrepr.py)."""

from __future__ import annotations

import importlib
import pkgutil
from typing import Any

import attrs

import openvaala_lsp
from openvaala_lsp.fieldrepr import FieldRepr, fields_repr
from openvaala_lsp.model import Page, WorkspaceFolder


def package_attrs_classes() -> list[type]:
    found = []
    for module_info in pkgutil.walk_packages(openvaala_lsp.__path__, "openvaala_lsp."):
        if module_info.name.endswith("__main__"):
            continue  # runs its program when imported
        module = importlib.import_module(module_info.name)
        for value in vars(module).values():
            if isinstance(value, type) and attrs.has(value) and value.__module__ == module.__name__:
                found.append(value)
    return found


def test_every_attrs_class_of_the_package_uses_the_shared_repr() -> None:
    classes = package_attrs_classes()
    assert len(classes) > 150  # the walk found the package's classes
    without = [f"{cls.__module__}.{cls.__qualname__}" for cls in classes if not issubclass(cls, FieldRepr)]
    assert without == [], "derive these from openvaala_lsp.fieldrepr.FieldRepr"
    # attrs' own __repr__ comes from code it compiled; a class's own hand-written one is fine
    generated = [cls.__qualname__ for cls in classes if cls.__repr__.__code__.co_filename.startswith("<attrs")]
    assert generated == []
    assert sum(cls.__repr__ is fields_repr for cls in classes) > 150


def test_the_repr_reads_as_attrs_writes_it() -> None:
    folder = WorkspaceFolder(name="a'b", path="/p")
    assert repr(folder) == """WorkspaceFolder(name="a'b", path='/p')"""
    page: Page[WorkspaceFolder, str] = Page(items=[folder])
    assert repr(page) == f"Page(items=[{folder!r}], next_cursor=None)"


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
