"""Which catalog images a check can use, read from its code: the image preflight's refusals apply to those only.

The checks do not declare their images; they name them in their code (``catalog.image("pause", ...)``, a helper's
default ``image_key="agnhost"``, a module constant, a parametrize value). :func:`images_of` walks the compiled code
of the test function and of its fixtures, and from there every function, method and class of the suite (``suites/``)
or of wincon it reaches by name (globals, module attributes, ``from wincon.x import y`` inside a function; a class
reached counts with all its methods), and keeps the string constants that are keys of the catalog. It over-reaches
(every branch counts) and can miss a key built at run time (``f"iis-v{n}"``) or reached through an object whose
class the code never names; where it finds none the caller requires every image (``None``). The caller asks about
every Windows key of the catalog (:func:`windows_catalog_keys`), so "none" means none at all: a check that names
only images that run where it goes is not refused, one naming none is refused by every refusal of its nodes
(wincon.session.collection.apply_image_refusals says which case in its message).
"""

from __future__ import annotations

import dis
import functools
import importlib
import inspect
import types
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

WINCON_DIR = Path(__file__).resolve().parents[1]


def _ours(obj: Any) -> bool:
    """Code of the suite (a file under a ``suites`` directory) or of wincon, never a library's."""
    try:
        path = Path(inspect.getfile(obj)).resolve()
    except (TypeError, OSError):
        return False
    return "suites" in path.parts[:-1] or WINCON_DIR in path.parents or path.parent == WINCON_DIR


_LIST_BUILDERS = {"BUILD_LIST", "BUILD_TUPLE", "LIST_APPEND"}
# (id, keys asked for) -> (obj, keys, strings, next)
_EDGES: dict[tuple[int, frozenset[str]], tuple[Any, frozenset[str], frozenset[str], tuple[Any, ...]]] = {}


def _edges(obj: Any, keys: frozenset[str]) -> tuple[frozenset[str], frozenset[str], tuple[Any, ...]]:
    """What one function, class or container names directly: catalog keys, other strings (fixture names a
    ``request.getfixturevalue`` may ask for), and the objects of ours it reaches. Cached: the code does not change."""
    cached = _EDGES.get((id(obj), keys))
    if cached is not None and cached[0] is obj:
        return cached[1], cached[2], cached[3]
    found: set[str] = set()
    strings: set[str] = set()
    children: list[Any] = []
    if isinstance(obj, (tuple, list, set, frozenset)):
        children += list(obj)
    elif isinstance(obj, dict):
        children += [*obj.keys(), *obj.values()]
    elif isinstance(obj, (staticmethod, classmethod)):
        children.append(obj.__func__)
    elif isinstance(obj, property):
        children += [a for a in (obj.fget, obj.fset) if a is not None]
    elif isinstance(obj, types.FunctionType):
        function = inspect.unwrap(obj)
        if _ours(function):
            children += [*(function.__defaults__ or ()), *(function.__kwdefaults__ or {}).values()]
            _code(function.__code__, function.__globals__, keys, found, strings, children)
    elif isinstance(obj, type) and _ours(obj):
        children += list(vars(obj).values())
    children = [c for c in children if not isinstance(c, str) or c in keys]
    found |= {c for c in children if isinstance(c, str)}
    result = (frozenset(found), frozenset(strings), tuple(c for c in children if not isinstance(c, str)))
    _EDGES[(id(obj), keys)] = (obj, *result)
    return result


def _code(
    code: types.CodeType, globals_: dict[str, Any], keys: frozenset[str], found: set[str], strings: set[str], out: list
) -> None:
    modules = [m for m in globals_.values() if isinstance(m, types.ModuleType) and _ours(m)]
    imported: types.ModuleType | None = None
    instructions = list(dis.get_instructions(code))
    for n, instruction in enumerate(instructions):
        if instruction.opname == "IMPORT_NAME":  # a function's own import: from wincon.x import y
            imported = _import(str(instruction.argval))
            if imported is not None:
                modules.append(imported)
        elif instruction.opname == "IMPORT_FROM" and imported is not None:
            out.append(getattr(imported, str(instruction.argval), None))
        elif instruction.opname == "LOAD_CONST" and isinstance(instruction.argval, str):
            following = instructions[n + 1].opname if n + 1 < len(instructions) else ""
            if instruction.argval in keys and following not in _LIST_BUILDERS:  # ["pause"]: agnhost's argument
                found.add(instruction.argval)
            else:
                strings.add(instruction.argval)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            _code(const, globals_, keys, found, strings, out)  # nested functions, lambdas, comprehensions
    for name in code.co_names:
        if name in globals_:
            out.append(globals_[name])
        for module in modules:  # module.name: the attribute of a module of ours
            if name in vars(module):
                out.append(vars(module)[name])


def _import(name: str) -> types.ModuleType | None:
    if not name.startswith("wincon"):
        return None
    try:
        module = importlib.import_module(name)
    except ImportError:
        return None
    return module if _ours(module) else None


@functools.cache
def windows_catalog_keys() -> frozenset[str]:
    """The keys of the catalog's Windows images: what :func:`images_of` is asked about, so that "none found" means
    the code names no catalog image at all (not merely none of the images refused somewhere)."""
    from wincon.workloads.catalog import Catalog

    return frozenset(k for k, spec in Catalog.load().images.items() if "windows" in spec.os)


def images_of(item: pytest.Item, keys: Iterable[str]) -> set[str] | None:
    """The catalog ``keys`` the check's code and fixtures name (see the module's docstring); None where none is
    found (the caller then requires every image)."""
    wanted = frozenset(keys)
    manager = getattr(item.session, "_fixturemanager", None)
    todo: list[Any] = []
    function = getattr(item, "function", None)
    if function is not None:
        todo.append(function)
    info = getattr(item, "_fixtureinfo", None)
    for definitions in info.name2fixturedefs.values() if info is not None else ():
        todo += [getattr(definition, "func", None) for definition in definitions]
    callspec = getattr(item, "callspec", None)
    if callspec is not None:
        todo += list(callspec.params.values())
    found: set[str] = {value for value in todo if isinstance(value, str) and value in wanted}
    seen: set[int] = set()
    asked: set[str] = set()
    while todo:
        obj = todo.pop()
        if obj is None or isinstance(obj, (str, int, float, bool)) or id(obj) in seen:
            continue
        seen.add(id(obj))
        direct, strings, children = _edges(obj, wanted)
        found |= direct
        todo += children
        names = list(strings - asked)  # request.getfixturevalue("name"): that fixture's code and its own fixtures
        while names:
            name = names.pop()
            asked.add(name)
            for definition in _fixture_defs(manager, name, item):
                todo.append(getattr(definition, "func", None))
                names += [arg for arg in getattr(definition, "argnames", ()) if arg not in asked]
    return found or None


def _fixture_defs(manager: Any, name: str, item: pytest.Item) -> list[Any]:
    if manager is None or not name.isidentifier():
        return []
    try:
        return list(manager.getfixturedefs(name, item) or ())
    except Exception:  # noqa: BLE001 (pytest's private lookup; a name that is no fixture)
        return []
