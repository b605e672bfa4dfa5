"""Records: frozen, keyword-only dataclasses that cost nothing to define.

``@dataclass`` writes the source of ``__init__``, ``__repr__``, ``__eq__``, ``__hash__``,
``__setattr__`` and ``__delattr__`` for every class and compiles it (on 3.11 about 1 ms a
class, nearly all of it in ``compile``): a relgate process that imports its 40 record types
paid ≈50 ms for that before it did anything. :func:`record` declares the same dataclass —
``dataclasses.fields``, ``replace``, ``asdict`` and ``is_dataclass`` work as before, and
``field(default=…, default_factory=…, compare=…, repr=…, hash=…, init=…)`` means what it
means there — but has ``dataclasses`` generate no code: the class gets the methods below,
compiled once with this module, which read the class's fields from a table made when the
class is defined.

    @record                  # frozen, keyword-only, compared and hashed by its fields
    @record(frozen=False)    # keyword-only and mutable (unhashable, as a dataclass is)
    @record(eq=False)        # frozen, compared and hashed by identity

``__dataclass_params__`` says ``init=repr=eq=frozen=False`` (dataclasses wrote none of it):
subclass a record with ``@record``; ``@dataclass(frozen=True)`` refuses a base that says so.

Even ``dataclasses.dataclass(init=False, repr=False, eq=False)`` cost ≈0.15 ms a class (its
annotation tests: a regex and a module lookup per field, for ``ClassVar`` and ``InitVar``),
6 ms of every start. A record's fields are made here instead, as dataclasses makes them
(``dataclasses.field`` objects in ``__dataclass_fields__``); a class this does not cover —
a ``ClassVar`` or ``InitVar``, annotations that are not strings, a Python whose dataclasses
keep fields otherwise — goes through ``dataclasses.dataclass`` as before.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable
from dataclasses import MISSING, FrozenInstanceError
from operator import attrgetter
from typing import Any, TypeVar, overload

__all__ = ["record"]

T = TypeVar("T", bound=type)

if sys.version_info >= (3, 11):
    from typing import dataclass_transform
else:  # pragma: no cover - 3.10 has no dataclass_transform; it only informs type checkers

    def dataclass_transform(**_: Any) -> Callable[[T], T]:
        return lambda f: f


_ABSENT = object()


def _init(self: Any, **kwargs: Any) -> None:
    cls = type(self)
    fast = cls.__record_fast__
    if fast is not None and kwargs.keys() == fast:  # every field given, no descriptor in the way
        object.__getattribute__(self, "__dict__").update(kwargs)  # (in the call's order: vars() may differ)
        if cls.__record_post__:
            self.__post_init__()
        return
    set_ = object.__setattr__
    given = 0
    for name, default, factory, required in cls.__record_init__:
        value = kwargs.get(name, _ABSENT)
        if value is not _ABSENT:
            given += 1
        elif required:
            raise TypeError(f"{cls.__qualname__}.__init__() missing 1 required keyword-only argument: {name!r}")
        else:
            value = default if factory is MISSING else factory()
        set_(self, name, value)
    if given != len(kwargs):
        unknown = next(k for k in kwargs if k not in cls.__record_names__ or k in cls.__record_noinit__)
        raise TypeError(f"{cls.__qualname__}.__init__() got an unexpected keyword argument {unknown!r}")
    for name, default, factory in cls.__record_fixed__:  # field(init=False)
        set_(self, name, default if factory is MISSING else factory())
    if cls.__record_post__:
        self.__post_init__()


_REPR_RUNNING: set[tuple[int, int]] = set()


def _repr(self: Any) -> str:
    import _thread

    key = (id(self), _thread.get_ident())
    if key in _REPR_RUNNING:  # a record that holds itself: as dataclasses prints it
        return "..."
    _REPR_RUNNING.add(key)
    try:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in type(self).__record_repr__)
    finally:
        _REPR_RUNNING.discard(key)
    return f"{type(self).__qualname__}({fields})"


def _eq(self: Any, other: Any) -> Any:
    if other.__class__ is self.__class__:
        key = type(self).__record_eq__
        return key(self) == key(other)
    return NotImplemented


def _hash(self: Any) -> int:
    return hash(type(self).__record_hash__(self))


def _frozen_setattr(self: Any, name: str, value: Any) -> None:
    if type(self).__dict__.get("__record_frozen__") or name in type(self).__record_names__:
        raise FrozenInstanceError(f"cannot assign to field {name!r}")
    object.__setattr__(self, name, value)  # an undecorated subclass's own attribute


def _frozen_delattr(self: Any, name: str) -> None:
    if type(self).__dict__.get("__record_frozen__") or name in type(self).__record_names__:
        raise FrozenInstanceError(f"cannot delete field {name!r}")
    object.__delattr__(self, name)


def _key(names: tuple[str, ...]) -> Callable[[Any], tuple[Any, ...]]:
    """The tuple of these attributes (always a tuple, as the dataclass methods compare)."""
    if len(names) > 1:
        return attrgetter(*names)
    if names:
        get = attrgetter(names[0])
        return lambda obj: (get(obj),)
    return lambda obj: ()


def _set(cls: type, name: str, value: Any) -> None:
    if name not in cls.__dict__:  # a method the class writes itself wins, as with dataclass
        setattr(cls, name, value)


def _template() -> tuple[Any, Any]:
    """The shared ``__dataclass_params__`` and the field kind, from one throwaway dataclass."""

    @dataclasses.dataclass(init=False, repr=False, eq=False, kw_only=True)
    class Template:
        """A docstring, or dataclass builds one from the signature (inspect: 4 ms)."""

        x: int = 0

    return Template.__dataclass_params__, dataclasses.fields(Template)[0]._field_type  # type: ignore[attr-defined]


_PARAMS = getattr(dataclasses, "_PARAMS", None)
_FIELDS = getattr(dataclasses, "_FIELDS", None)
_PARAMS_VALUE, _FIELD_KIND = _template()
_UNCOVERED = ("ClassVar", "InitVar")  # words in an annotation that send a class to dataclasses


def _fields(cls: type) -> tuple[dataclasses.Field[Any], ...] | None:
    """The class's fields, set as ``dataclasses.dataclass(kw_only=True)`` sets them (inherited
    ones first), or None for a class that ``dataclasses`` must process itself."""
    own = cls.__dict__.get("__annotations__")
    if (_PARAMS != "__dataclass_params__" or _FIELDS != "__dataclass_fields__" or own is None
            or any(not isinstance(t, str) or any(w in t for w in _UNCOVERED) for t in own.values())):
        return None
    fields: dict[str, dataclasses.Field[Any]] = {}
    for base in cls.__mro__[-1:0:-1]:
        inherited = getattr(base, "__dataclass_fields__", None)
        if inherited is not None:
            fields.update(inherited)
    for name, annotation in own.items():
        default = cls.__dict__.get(name, MISSING)
        f = default if isinstance(default, dataclasses.Field) else dataclasses.field(default=default)
        f.name, f.type = name, annotation  # type: ignore[assignment]
        f._field_type = _FIELD_KIND  # type: ignore[attr-defined]
        if f.kw_only is MISSING:  # type: ignore[attr-defined]
            f.kw_only = True  # type: ignore[attr-defined]
        if f.default is not MISSING and f.default.__class__.__hash__ is None:
            raise ValueError(f"mutable default {type(f.default)} for field {name} is not allowed: use default_factory")
        fields[name] = f
        if default is f:  # as dataclasses: the class keeps the default, never the Field
            if f.default is MISSING:
                delattr(cls, name)
            else:
                setattr(cls, name, f.default)
    for name, value in cls.__dict__.items():
        if isinstance(value, dataclasses.Field) and name not in own:
            raise TypeError(f"{name!r} is a field but has no type annotation")
    cls.__dataclass_fields__ = fields  # type: ignore[attr-defined]
    cls.__dataclass_params__ = _PARAMS_VALUE  # type: ignore[attr-defined]
    if "__match_args__" not in cls.__dict__:
        cls.__match_args__ = ()  # type: ignore[attr-defined]  # keyword-only: nothing to match by position
    return tuple(f for f in fields.values() if f._field_type is _FIELD_KIND)  # type: ignore[attr-defined]


def _fast_path(cls: type, fields: tuple[dataclasses.Field[Any], ...]) -> frozenset[str] | None:
    """The init fields' names, when a call that gives every one of them may fill the
    instance's ``__dict__`` at once (one C call, not a ``setattr`` a field: less than half the
    cost, which tells on 20,000 results of a compare): every field is an init field, the class
    has a ``__dict__`` (no ``__slots__``), and no attribute of the class is a data descriptor
    that a ``setattr`` would call instead."""
    if any(not f.init for f in fields) or any("__slots__" in base.__dict__ for base in cls.__mro__[:-1]):
        return None
    for f in fields:
        attr = getattr(cls, f.name, None)
        if attr is not None and (hasattr(type(attr), "__set__") or hasattr(type(attr), "__delete__")):
            return None
    return frozenset(f.name for f in fields)


def _make(cls: T, *, frozen: bool, eq: bool) -> T:
    if not cls.__dict__.get("__doc__"):
        cls.__doc__ = cls.__name__  # else dataclass builds a signature for it (inspect)
    for base in cls.__mro__[1:]:  # as dataclasses refuses to mix frozen and mutable ones
        if "__record_frozen__" in base.__dict__ and base.__dict__["__record_frozen__"] != frozen:
            raise TypeError(f"cannot inherit {'frozen' if frozen else 'non-frozen'} record {cls.__name__} "
                            f"from a {'non-frozen' if frozen else 'frozen'} one ({base.__name__})")
    class_hash = cls.__dict__.get("__hash__", MISSING)
    explicit_hash = not (class_hash is MISSING or (class_hash is None and "__eq__" in cls.__dict__))
    fields = _fields(cls)
    if fields is None:  # what _fields does not cover: dataclasses decides
        cls = dataclasses.dataclass(init=False, repr=False, eq=False, kw_only=True)(cls)
        fields = dataclasses.fields(cls)
    cls.__record_init__ = tuple(  # type: ignore[attr-defined]
        (f.name, f.default, f.default_factory, f.default is MISSING and f.default_factory is MISSING)
        for f in fields if f.init)
    cls.__record_fixed__ = tuple((f.name, f.default, f.default_factory) for f in fields  # type: ignore[attr-defined]
                                 if not f.init and (f.default is not MISSING or f.default_factory is not MISSING))
    cls.__record_repr__ = tuple(f.name for f in fields if f.repr)  # type: ignore[attr-defined]
    cls.__record_names__ = frozenset(f.name for f in fields)  # type: ignore[attr-defined]
    cls.__record_noinit__ = frozenset(f.name for f in fields if not f.init)  # type: ignore[attr-defined]
    cls.__record_frozen__ = frozen  # type: ignore[attr-defined]
    cls.__record_post__ = hasattr(cls, "__post_init__")  # type: ignore[attr-defined]
    cls.__record_fast__ = _fast_path(cls, fields)  # type: ignore[attr-defined]
    _set(cls, "__init__", _init)
    _set(cls, "__repr__", _repr)
    if eq:
        cls.__record_eq__ = staticmethod(_key(tuple(f.name for f in fields if f.compare)))  # type: ignore[attr-defined]
        _set(cls, "__eq__", _eq)
        if not explicit_hash:
            if frozen:
                hashed = tuple(f.name for f in fields if (f.compare if f.hash is None else f.hash))
                cls.__record_hash__ = staticmethod(_key(hashed))  # type: ignore[attr-defined]
                cls.__hash__ = _hash  # type: ignore[assignment]
            else:
                cls.__hash__ = None  # type: ignore[assignment]
    if frozen:
        if "__setattr__" in cls.__dict__ or "__delattr__" in cls.__dict__:
            raise TypeError(f"cannot overwrite attribute __setattr__ or __delattr__ in class {cls.__name__}")
        cls.__setattr__ = _frozen_setattr  # type: ignore[assignment]
        cls.__delattr__ = _frozen_delattr  # type: ignore[assignment]
    return cls


@overload
def record(cls: T, /) -> T: ...


@overload
def record(*, frozen: bool = True, eq: bool = True) -> Callable[[T], T]: ...


@dataclass_transform(kw_only_default=True, frozen_default=True, field_specifiers=(dataclasses.field,))
def record(cls: T | None = None, /, *, frozen: bool = True, eq: bool = True) -> T | Callable[[T], T]:
    """A keyword-only dataclass (frozen unless ``frozen=False``) without generated code."""
    if cls is None:
        return lambda c: _make(c, frozen=frozen, eq=eq)
    return _make(cls, frozen=frozen, eq=eq)
