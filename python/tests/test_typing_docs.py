"""Every public name has a stub in the shipped .pyi and a docstring."""

import ast
import inspect
from pathlib import Path

import zrecord

STUB = Path(zrecord.__file__).with_name("__init__.pyi")


def test_stub_covers_every_public_name():
    tree = ast.parse(STUB.read_text())
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef)):
            names.add(node.name)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    assert set(zrecord.__all__) <= names, set(zrecord.__all__) - names
    assert (Path(zrecord.__file__).with_name("py.typed")).exists()


def test_every_public_name_and_method_has_a_docstring():
    missing = []
    for name in zrecord.__all__:
        obj = getattr(zrecord, name)
        if name == "DICT_TIERS":
            continue
        if not (obj.__doc__ or "").strip():
            missing.append(name)
        if inspect.isclass(obj):
            for attr, member in vars(obj).items():
                if attr.startswith("_") and attr not in ("__getitem__", "__getitems__", "__init__"):
                    continue
                fn = getattr(member, "__func__", member)
                if callable(fn) and not (fn.__doc__ or "").strip() and attr != "__init__":
                    missing.append(f"{name}.{attr}")
    assert not missing, missing
