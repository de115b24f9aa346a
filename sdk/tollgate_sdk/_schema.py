"""JSON Schema for a tool's arguments, derived from a Python signature.

The schema lands in the policy file, where tollgate checks every call's
arguments against it on the host before any rule runs (docs/policy.md,
"Argument schemas").  tollgate's schema language is a deliberate subset
(type, properties, required, additionalProperties true/false, items, enum,
minimum, maximum, maxLength, pattern, title, description, default,
examples), so every hint is mapped onto that subset, and a hint that
cannot be said in it is an error here, at definition time, rather than a
schema the gate would refuse or, worse, a constraint silently dropped.

Supported hints: str, int, float, bool, None, Any, list / list[X] /
tuple[X, ...] / Sequence[X], dict / dict[str, X] / Mapping, Optional[X] and
X | None, unions of plain types (int | str), Literal[...], TypedDict,
dataclasses, and Annotated[X, "description"].
"""
from __future__ import annotations

import dataclasses
import inspect
import json
import types
import typing
from typing import Any, Callable

from ._errors import ToolDefinitionError

# a JSON Schema in tollgate's subset (docs/policy.md, "Argument schemas")
JSONSchema = dict[str, Any]

_SCALARS: dict[object, str] = {str: "string", int: "integer", float: "number", bool: "boolean",
            type(None): "null"}
_SUPPORTED = ("str, int, float, bool, None, Any, list[...], tuple[X, ...], dict, "
              "Optional[...], Literal[...], a TypedDict or a dataclass")

# Keywords tollgate's policy schema accepts (governance/schema.c).
POLICY_KEYWORDS = frozenset(("type", "properties", "required", "additionalProperties", "items",
                             "enum", "minimum", "maximum", "maxLength", "pattern", "title",
                             "description", "default", "examples"))


def _is_typeddict(t: object) -> bool:
    return isinstance(t, type) and issubclass(t, dict) and hasattr(t, "__required_keys__")


def _unsupported(where: str, hint: object, why: str = "") -> ToolDefinitionError:
    name = getattr(hint, "__name__", None) or repr(hint)
    return ToolDefinitionError("%s: type hint %s is not supported%s; use %s"
                               % (where, name, (" (" + why + ")") if why else "", _SUPPORTED))


def hint_schema(hint: object, where: str) -> JSONSchema:
    """The JSON Schema (a dict in tollgate's subset) for one type hint.
    where names the place for error messages ("refund(): parameter 'amount'").
    Raises ToolDefinitionError for a hint the subset cannot express."""
    return _hint_schema(hint, where, ())


def _hint_schema(hint: object, where: str, seen: tuple[object, ...]) -> JSONSchema:
    """hint_schema, seen holding the classes being expanded (a cycle)."""
    if hint is typing.Any or hint is inspect.Parameter.empty:
        return {}
    if hint is None or hint is type(None):
        return {"type": "null"}
    if hint in _SCALARS:
        return {"type": _SCALARS[hint]}
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin is typing.Annotated:
        s = _hint_schema(args[0], where, seen)
        docs = [a for a in args[1:] if isinstance(a, str)]
        if docs:
            s = dict(s, description=" ".join(docs))
        return s
    if origin is typing.Literal:
        values = list(args)
        for v in values:
            if not isinstance(v, (str, int, float, bool)) and v is not None:
                raise _unsupported(where, hint, "Literal values must be str, int, float, bool or None")
        kinds = {_SCALARS[type(v)] for v in values}
        lit: JSONSchema = {"enum": values}
        if len(kinds) == 1:
            lit["type"] = kinds.pop()
        return lit
    if origin in (typing.Union, types.UnionType):
        parts = [_hint_schema(a, where, seen) for a in args]
        # tollgate's subset has no anyOf: a union is a list of type names,
        # which is exact only when at most one member carries keywords of
        # its own (items, properties, enum) besides its type.
        names: list[str] = []
        extra: JSONSchema = {}
        for p in parts:
            t = p.get("type")
            if t is None:
                if p == {}:
                    return {}  # Optional[Any]: anything
                raise _unsupported(where, hint, "a union may only combine plain types, "
                                   "at most one of them a list, object or Literal")
            for n in (t if isinstance(t, list) else [t]):
                if n not in names:
                    names.append(n)
            rest = {k: v for k, v in p.items() if k != "type"}
            if rest:
                if extra:
                    raise _unsupported(where, hint, "a union may only combine plain types, "
                                       "at most one of them a list, object or Literal")
                extra = rest
        if "enum" in extra and None not in extra["enum"] and "null" in names:
            extra = dict(extra, enum=extra["enum"] + [None])
        s = dict(extra)
        s["type"] = names[0] if len(names) == 1 else names
        return s
    if hint in (set, frozenset) or origin in (set, frozenset):
        raise _unsupported(where, hint, "JSON has no sets")
    if hint in (list, tuple) or origin in (list, tuple, typing.Sequence) or (
            origin is not None and origin.__module__ == "collections.abc" and origin.__name__ == "Sequence"):
        s = {"type": "array"}
        if origin is tuple and args:
            if len(args) == 2 and args[1] is Ellipsis:
                s["items"] = _hint_schema(args[0], where, seen)
            elif len(set(args)) == 1:
                s["items"] = _hint_schema(args[0], where, seen)
            else:
                raise _unsupported(where, hint, "fixed tuples of mixed types; use tuple[X, ...] or list[X]")
        elif args:
            s["items"] = _hint_schema(args[0], where, seen)
        return s
    if hint is dict or origin is dict or (
            origin is not None and getattr(origin, "__name__", "") == "Mapping"):
        if args and args[0] is not str:
            raise _unsupported(where, hint, "JSON object keys are strings: use dict[str, ...]")
        # The subset's additionalProperties is true/false only, so the value
        # type of dict[str, X] cannot be checked by the gate: say so in the
        # schema's description rather than pretend.
        s = {"type": "object"}
        if args and args[1] is not typing.Any:
            _hint_schema(args[1], where, seen)  # still refuse an unsupported value type
        return s
    if _is_typeddict(hint) or dataclasses.is_dataclass(hint):
        if hint in seen:
            raise _unsupported(where, hint, "recursive types have no finite schema")
        return _record_schema(hint, where, seen + (hint,))
    if origin is not None:
        raise _unsupported(where, hint)
    raise _unsupported(where, hint)


def _record_schema(cls: Any, where: str, seen: tuple[object, ...]) -> JSONSchema:
    hints = typing.get_type_hints(cls, include_extras=True)
    cls_name = getattr(cls, "__name__", repr(cls))
    props: dict[str, JSONSchema] = {}
    required: list[str] = []
    if dataclasses.is_dataclass(cls):
        for f in dataclasses.fields(cls):
            props[f.name] = _hint_schema(hints.get(f.name, typing.Any),
                                         "%s, field %s.%s" % (where, cls_name, f.name), seen)
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                required.append(f.name)
    else:
        for name, h in hints.items():
            props[name] = _hint_schema(h, "%s, key %s[%r]" % (where, cls_name, name), seen)
        required = [k for k in hints if k in cls.__required_keys__]
    s: JSONSchema = {"type": "object", "properties": props, "additionalProperties": False}
    if required:
        s["required"] = required
    return s


def _jsonable_default(value: object) -> bool:
    try:
        json.dumps(value)
        return True
    except (TypeError, ValueError):
        return False


def signature_schema(fn: Callable[..., Any], name: str | None = None) -> JSONSchema:
    """The arguments' schema of a callable: an object with one property per
    parameter, required when it has no default, no other properties.
    Raises ToolDefinitionError naming the function and parameter."""
    label = "%s()" % (name or getattr(fn, "__name__", repr(fn)))
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError) as e:
        raise ToolDefinitionError("%s: cannot read its signature (%s)" % (label, e)) from None
    try:
        hints = typing.get_type_hints(fn, include_extras=True)
    except Exception as e:  # a forward reference that does not resolve
        raise ToolDefinitionError("%s: its type hints do not resolve (%s)" % (label, e)) from None
    props: dict[str, JSONSchema] = {}
    required: list[str] = []
    for p in sig.parameters.values():
        where = "%s: parameter '%s'" % (label, p.name)
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            raise ToolDefinitionError("%s: *args and **kwargs cannot be tool arguments (a call's "
                                      "arguments are one JSON object); name each parameter" % where)
        if p.kind is p.POSITIONAL_ONLY:
            raise ToolDefinitionError("%s is positional-only; tools are called with keyword "
                                      "arguments, so remove the '/'" % where)
        s = hint_schema(hints.get(p.name, typing.Any), where)
        if p.default is p.empty:
            required.append(p.name)
        elif _jsonable_default(p.default):
            s = dict(s, default=p.default)
        props[p.name] = s
    out: JSONSchema = {"type": "object", "properties": props, "additionalProperties": False}
    if required:
        out["required"] = required
    return out


def to_policy_schema(schema: object, where: str) -> JSONSchema:
    """A JSON Schema from elsewhere (LangChain's args_schema, pydantic's
    model_json_schema(), an MCP tool) rewritten into tollgate's subset:
    $ref into $defs is inlined, anyOf of plain types becomes a type list,
    allOf of one schema is unwrapped.  Keywords the subset has no word for
    (format, exclusiveMinimum, ...) are left out: the gate cannot enforce
    them, and the tool itself still validates its input, as with schemas
    imported from MCP servers.  Raises ToolDefinitionError for a shape
    with no faithful translation (a oneOf of objects, say)."""
    return _to_policy_schema(schema, where, None, 0)


def _to_policy_schema(schema: object, where: str, _defs: dict[str, Any] | None,
                      _depth: int) -> JSONSchema:
    """to_policy_schema at nesting _depth, with the outermost schema's
    $defs."""
    if not isinstance(schema, dict):
        raise ToolDefinitionError("%s: a schema must be a JSON object, not %r" % (where, type(schema).__name__))
    if _depth > 32:
        raise ToolDefinitionError("%s: the schema nests more than 32 levels (recursive $ref?)" % where)
    defs = _defs if _defs is not None else dict(schema.get("$defs") or schema.get("definitions") or {})
    s = schema
    if "$ref" in s:
        ref = s["$ref"]
        key = ref.rsplit("/", 1)[-1] if isinstance(ref, str) else None
        if key is None or key not in defs:
            raise ToolDefinitionError("%s: $ref %r does not point into $defs" % (where, ref))
        merged = dict(defs[key])
        merged.update({k: v for k, v in s.items() if k != "$ref"})
        s = merged
    if "allOf" in s and isinstance(s["allOf"], list) and len(s["allOf"]) == 1:
        merged = dict(s["allOf"][0])
        merged.update({k: v for k, v in s.items() if k != "allOf"})
        return _to_policy_schema(merged, where, defs, _depth + 1)
    for key in ("anyOf", "oneOf"):
        if key in s:
            alts = [_to_policy_schema(a, where, defs, _depth + 1) for a in s[key]]
            names: list[str] = []
            extra: JSONSchema = {}
            for a in alts:
                t = a.get("type")
                if t is None:
                    raise ToolDefinitionError("%s: %s with an alternative that has no type cannot be "
                                              "checked by the gate; give each alternative a type" % (where, key))
                for n in (t if isinstance(t, list) else [t]):
                    if n not in names:
                        names.append(n)
                rest = {k: v for k, v in a.items() if k not in ("type", "title", "description", "default")}
                if rest:
                    if extra:
                        raise ToolDefinitionError("%s: %s of several structured alternatives has no "
                                                  "equivalent in tollgate's schema subset" % (where, key))
                    extra = rest
            base = {k: v for k, v in s.items() if k != key}
            alt = _to_policy_schema(base, where, defs, _depth + 1) if base else {}
            alt.update(extra)
            alt["type"] = names[0] if len(names) == 1 else names
            return alt
    out: JSONSchema = {}
    for k, v in s.items():
        if k not in POLICY_KEYWORDS:
            continue
        if k == "properties":
            if not isinstance(v, dict):
                raise ToolDefinitionError("%s: properties must be an object" % where)
            out[k] = {pk: _to_policy_schema(pv, "%s.%s" % (where, pk), defs, _depth + 1)
                      for pk, pv in v.items()}
        elif k == "items":
            if isinstance(v, dict):
                out[k] = _to_policy_schema(v, where + "[]", defs, _depth + 1)
        elif k == "additionalProperties":
            if isinstance(v, bool):
                out[k] = v
        else:
            out[k] = v
    return out
