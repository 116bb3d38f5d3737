"""Values computed from a backend's base flag, or from an object of any class of a family, read
case by case.

A read of a backend's base attribute (``self.impl.lse_base_on_e``) is a :class:`~.values.Flag`:
a bool each class of the backend's family declares, judged per class by the rules. An
expression of it that the interpreter cannot fold (``LseBase(impl.lse_base_on_e)``, ``TABLE[
impl.lse_base_on_e]``, ``flag or default``) is a function of that one bool, so it is read twice,
once where the flag reads True and once where it reads False (the scope's ``expr``); the two
results make a :class:`~.values.FlagCase`, or fold back into the flag itself (``x is E`` of such
a member), its negation, or one value both ways (a default that swallows a falsy member).
The same holds for an object that may be of any class of a family (``self.impl``): an expression
of it the interpreter cannot fold (``isinstance(self.impl, TwoImpl)``) is read once per class,
the object of exactly that class; where each class's result is the bool it declares for a base
attribute, the expression is that flag (judged per class by the rules), or its negation.
Nothing here reads the program: only values.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from attn_contracts.lint.values import Flag
from attn_contracts.lint.values import FlagCase
from attn_contracts.lint.values import Inst
from attn_contracts.lint.values import Lit
from attn_contracts.lint.values import Member
from attn_contracts.lint.values import Tup
from attn_contracts.lint.values import Union_
from attn_contracts.lint.values import Value
from attn_contracts.lint.values import join

__all__ = ["MAX_CLASS_CASES", "PURE_BUILTINS", "FlagKey", "as_class", "assumed", "case", "family_in",
           "flag_in", "key_of", "one_value", "unsettled"]

#: the most classes an object of a family is read as, one by one (a larger family: not split)
MAX_CLASS_CASES = 8

#: a flag's identity, whatever the place it was read at: the attribute and its owner
FlagKey = tuple[str, Inst | None]

#: builtins whose call runs no code of the program and changes nothing: an expression made
#: of them may be read again under each value of a flag
PURE_BUILTINS = frozenset({"bool", "int", "float", "str", "len", "isinstance", "issubclass",
                           "getattr", "hasattr", "type", "tuple", "frozenset", "abs", "min",
                           "max", "any", "all", "repr"})


def key_of(flag: Flag) -> FlagKey:
    return flag.attr, flag.owner


def flag_in(value: Value) -> Flag | None:
    """The first flag ``value`` may be, or be computed from (a union's, in its fixed order);
    None where it holds none."""
    if isinstance(value, Flag):
        return value
    if isinstance(value, FlagCase):
        return value.flag
    if isinstance(value, Union_) and any(isinstance(o, (Flag, FlagCase)) for o in value.options):
        return next(f for o in value.ordered() if (f := flag_in(o)) is not None)
    return None


def unsettled(value: Value) -> bool:
    """Whether an expression's value may be sharper read case by case: not known, or one of
    several values that are no flags (what a test of the flag chose between), or of which
    one is a case; never a flag or a case itself, nor flags and literals (each judged as it
    is: a property of each class of a family, say)."""
    if value is None:
        return True
    if not isinstance(value, Union_) or value.widened:
        return False
    return any(isinstance(o, FlagCase) for o in value.options) or \
        not any(isinstance(o, Flag) for o in value.options)


def assumed(value: Value, assumptions: Mapping[FlagKey, bool]) -> Value:
    """``value`` where each flag of ``assumptions`` reads the bool it is assumed to: a flag
    becomes that literal (its negation the other), a case its branch."""
    if isinstance(value, Flag):
        held = assumptions.get(key_of(value))
        return value if held is None else Lit(
            held != value.negated, value.where,
            f" (where {value.attr} reads {held}, as a class of the backend may declare it)")
    if isinstance(value, FlagCase):
        held = assumptions.get(key_of(value.flag))
        return value if held is None else assumed(
            value.on_true if held else value.on_false, assumptions)
    if isinstance(value, Union_) and not value.widened and flag_in(value) is not None:
        return join([assumed(o, assumptions) for o in value.ordered()])
    return value


def case(flag: Flag, on_true: Value, on_false: Value) -> Value:
    """The value an expression of ``flag`` has, from what it is where the flag reads True
    and where it reads False: the flag itself where those are True and False, its negation
    where False and True, the one value where both agree, else a :class:`FlagCase`."""
    flag = replace(flag, negated=False)
    if isinstance(on_true, Lit) and isinstance(on_false, Lit) and \
            type(on_true.value) is type(on_false.value):
        if on_true.value == on_false.value:
            return on_true
        if isinstance(on_true.value, bool):
            return replace(flag, negated=not on_true.value)
    if on_true == on_false:
        return on_true
    if not (_data(on_true) and _data(on_false)):
        # not read one way, or an object, a tensor (an LSE picked by the flag): a case would
        # hide what it holds from every rule; the caller keeps what it read unsplit
        return None
    return FlagCase(flag, on_true, on_false)


def _data(value: Value) -> bool:
    """Whether ``value`` is plain data a case may hold: a literal, an Enum member, a tuple of
    them."""
    if isinstance(value, (Lit, Member)):
        return True
    return isinstance(value, Tup) and not value.partial_items and all(map(_data, value.items))


def family_in(value: Value) -> Inst | None:
    """The object ``value`` is where it may be of any class of a family (no constructor call
    known: an annotated parameter, a ``cast``); None for anything else."""
    if isinstance(value, Inst) and not value.exact and value.ctor is None:
        return value
    return None


def as_class(value: Value, owner: Inst, exact: Inst) -> Value:
    """``value`` where the object ``owner`` is ``exact`` (an object of exactly one class of its
    family): the object itself, and a flag read on it (then read as that class holds it)."""
    if value == owner:
        return exact
    if isinstance(value, Flag) and value.owner == owner:
        return replace(value, owner=exact)
    if isinstance(value, Union_) and not value.widened and any(
            o == owner or (isinstance(o, Flag) and o.owner == owner) for o in value.options):
        return join([as_class(o, owner, exact) for o in value.ordered()])
    return value


def one_value(results: list[Value]) -> Value:
    """The one value every result is (literals of one type and value, wherever written);
    None where they differ."""
    first = results[0] if results else None
    if all(isinstance(r, Lit) and isinstance(first, Lit) and type(r.value) is
           type(first.value) and r.value == first.value for r in results) or \
            all(r == first for r in results):
        return first
    return None
