"""``relgate.core.record``: a record behaves as the frozen, keyword-only dataclass it replaces."""

from __future__ import annotations

import copy
import dataclasses
import pickle
from dataclasses import FrozenInstanceError, field
from typing import ClassVar

import pytest

from relgate.core.record import record


@record
class Point:
    """A point."""

    x: int
    y: int = 0
    tags: tuple[str, ...] = ()
    meta: dict[str, str] = field(default_factory=dict, hash=False)
    where: str = field(default="", compare=False)
    hidden: str = field(default="h", repr=False)


@dataclasses.dataclass(frozen=True, kw_only=True)
class DataPoint:
    """The same, as a dataclass."""

    x: int
    y: int = 0
    tags: tuple[str, ...] = ()
    meta: dict[str, str] = field(default_factory=dict, hash=False)
    where: str = field(default="", compare=False)
    hidden: str = field(default="h", repr=False)


@record
class Checked:
    n: int

    def __post_init__(self) -> None:
        if self.n < 0:
            raise ValueError("n must not be negative")


@record
class Labelled(Checked):
    label: str = "?"


@record(frozen=False)
class Tally:
    items: list[int] = field(default_factory=list)
    total: int = 0
    computed: int = field(default=7, init=False)


@record(eq=False)
class Handle:
    name: str


@record
class Holder:
    items: list[object]


def test_a_record_is_the_dataclass_it_replaces():
    p = Point(x=1, y=2, tags=("a",), meta={"k": "v"}, where="here")
    d = DataPoint(x=1, y=2, tags=("a",), meta={"k": "v"}, where="here")
    assert dataclasses.is_dataclass(p)
    assert [f.name for f in dataclasses.fields(p)] == [f.name for f in dataclasses.fields(d)]
    assert repr(p) == repr(d).replace("DataPoint", "Point")
    assert dataclasses.asdict(p) == dataclasses.asdict(d)
    assert dataclasses.replace(p, y=5) == Point(x=1, y=5, tags=("a",), meta={"k": "v"})
    assert Point.__match_args__ == DataPoint.__match_args__ == ()


def test_equality_and_hash_follow_the_compared_fields():
    for cls in (Point, DataPoint):
        a, b, c = cls(x=1, where="a"), cls(x=1, where="b"), cls(x=1, meta={"k": "v"})
        assert a == b and hash(a) == hash(b)  # where: compare=False
        assert a != c and hash(a) == hash(c)  # meta: compared, not hashed
    assert Point(x=1) != DataPoint(x=1)  # another class is never equal, as with dataclasses
    assert (Point(x=1) == (1, 0)) is False
    assert len({Point(x=1), Point(x=1), Point(x=2)}) == 2
    assert Labelled(n=1) != Checked(n=1) and Labelled(n=1) == Labelled(n=1)


def test_frozen_and_keyword_only():
    p = Point(x=1)
    with pytest.raises(FrozenInstanceError, match="cannot assign to field 'x'"):
        p.x = 2  # type: ignore[misc]
    with pytest.raises(FrozenInstanceError, match="cannot delete field 'x'"):
        del p.x
    with pytest.raises(TypeError, match="missing 1 required keyword-only argument: 'x'"):
        Point()  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="unexpected keyword argument 'z'"):
        Point(x=1, z=2)  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        Point(1)  # type: ignore[misc]


def test_defaults_factories_post_init_and_inheritance():
    assert Point(x=1).meta is not Point(x=1).meta  # a fresh dict each time
    with pytest.raises(ValueError, match="negative"):
        Labelled(n=-1)
    assert repr(Labelled(n=1)) == "Labelled(n=1, label='?')"
    assert Point.__doc__ == "A point."


def test_a_call_that_gives_every_field_makes_the_same_record():
    # Such a call fills the instance at once (the fast path); what it makes must not differ.
    kw = dict(x=1, y=2, tags=("a",), meta={"k": "v"}, where="w", hidden="z")
    p, d = Point(**kw), DataPoint(**kw)
    assert repr(p) == repr(d).replace("DataPoint", "Point") and dataclasses.asdict(p) == dataclasses.asdict(d)
    assert p == Point(**dict(reversed(kw.items()))) and hash(p) == hash(Point(**kw))
    with pytest.raises(FrozenInstanceError):
        p.y = 3  # type: ignore[misc]
    with pytest.raises(ValueError, match="negative"):  # __post_init__ still runs
        Labelled(n=-1, label="x")
    assert Point.__record_fast__ is not None  # type: ignore[attr-defined]
    assert Tally.__record_fast__ is None  # type: ignore[attr-defined]  # an init=False field to set


def test_mutable_records_and_identity_records():
    t = Tally()
    t.total = 3
    t.items.append(1)
    assert t == Tally(items=[1], total=3) and t.computed == 7
    assert Tally.__hash__ is None  # mutable and compared: unhashable, as a dataclass
    with pytest.raises(TypeError, match="unexpected keyword argument 'computed'"):
        Tally(computed=1)  # type: ignore[call-arg]
    h = Handle(name="a")
    assert h != Handle(name="a") and h == h and hash(h) == object.__hash__(h)


def test_copies_pickles_and_recursive_repr():
    p = Labelled(n=2, label="x")
    assert pickle.loads(pickle.dumps(p)) == p
    assert copy.deepcopy(p) == p and copy.copy(p) == p
    h = Holder(items=[])
    h.items.append(h)
    assert repr(h) == "Holder(items=[...])"


def test_a_lazy_pattern_compiles_on_first_use():
    import re

    from relgate.core.patterns import LazyPattern

    p = LazyPattern(r"(?P<name>ab+)", re.IGNORECASE)
    assert p._compiled is None
    assert p.sub("-", "xABBy") == "x-y" and p.search("ab")["name"] == "ab"
    assert p.compiled() is p._compiled and p.pattern == "(?P<name>ab+)" and p.flags & re.IGNORECASE


def test_frozen_and_mutable_records_do_not_mix():
    with pytest.raises(TypeError, match="cannot inherit non-frozen record"):
        @record(frozen=False)
        class Loose(Checked):
            extra: int = 0
    with pytest.raises(TypeError, match="cannot inherit frozen record"):
        @record
        class Strict(Tally):
            extra: int = 0


def test_fields_are_the_ones_dataclasses_makes():
    for mine, theirs in zip(dataclasses.fields(Point), dataclasses.fields(DataPoint)):
        assert (mine.name, mine.type, mine.default, mine.default_factory, mine.init, mine.repr, mine.hash,
                mine.compare, mine.kw_only) == (theirs.name, theirs.type, theirs.default, theirs.default_factory,
                                                theirs.init, theirs.repr, theirs.hash, theirs.compare, theirs.kw_only)
    assert Point.y == DataPoint.y == 0 and "meta" not in Point.__dict__  # the class keeps defaults, not Fields
    assert [f.name for f in dataclasses.fields(Labelled)] == ["n", "label"]


def test_what_the_fast_path_does_not_cover_goes_through_dataclasses():
    @record
    class Counted:
        n: int = 0
        made: ClassVar[int] = 0

    assert [f.name for f in dataclasses.fields(Counted)] == ["n"] and Counted.made == 0
    assert Counted(n=1) == Counted(n=1)


def test_the_mistakes_dataclasses_refuses_are_refused():
    with pytest.raises(ValueError, match="mutable default <class 'list'> for field items"):
        @record
        class Mutable:
            items: list[int] = []  # noqa: RUF012
    with pytest.raises(TypeError, match="'loose' is a field but has no type annotation"):
        @record
        class Unannotated:
            n: int = 0
            loose = field(default=1)
