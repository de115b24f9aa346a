"""Schema derivation: every supported hint, and a clear error for the rest."""
import dataclasses
import typing
from typing import Annotated, Any, Literal, Optional, TypedDict

import pytest

from tollgate_sdk import ToolDefinitionError, condition, hint_schema, signature_schema, tool


class Customer(TypedDict):
    id: int
    name: str


class PartialCustomer(TypedDict, total=False):
    id: int


@dataclasses.dataclass
class Line:
    sku: str
    qty: int = 1


def h(x):
    return hint_schema(x, "f(): parameter 'x'")


class TestHints:
    def test_scalars(self):
        assert h(str) == {"type": "string"}
        assert h(int) == {"type": "integer"}
        assert h(float) == {"type": "number"}
        assert h(bool) == {"type": "boolean"}
        assert h(type(None)) == {"type": "null"}
        assert h(Any) == {}

    def test_lists(self):
        assert h(list) == {"type": "array"}
        assert h(list[int]) == {"type": "array", "items": {"type": "integer"}}
        assert h(typing.List[str]) == {"type": "array", "items": {"type": "string"}}
        assert h(tuple[float, ...]) == {"type": "array", "items": {"type": "number"}}
        assert h(list[list[str]]) == {"type": "array", "items": {"type": "array", "items": {"type": "string"}}}

    def test_dicts(self):
        assert h(dict) == {"type": "object"}
        assert h(dict[str, int]) == {"type": "object"}
        assert h(typing.Dict[str, Any]) == {"type": "object"}

    def test_optional_and_unions(self):
        assert h(Optional[str]) == {"type": ["string", "null"]}
        assert h(int | None) == {"type": ["integer", "null"]}
        assert h(int | str) == {"type": ["integer", "string"]}
        assert h(Optional[list[int]]) == {"type": ["array", "null"], "items": {"type": "integer"}}

    def test_literal(self):
        assert h(Literal["EU", "US"]) == {"enum": ["EU", "US"], "type": "string"}
        assert h(Literal[1, "a"]) == {"enum": [1, "a"]}
        assert h(Optional[Literal["a"]]) == {"enum": ["a", None], "type": ["string", "null"]}

    def test_typeddict(self):
        assert h(Customer) == {"type": "object", "additionalProperties": False,
                               "properties": {"id": {"type": "integer"}, "name": {"type": "string"}},
                               "required": ["id", "name"]}
        assert "required" not in h(PartialCustomer)

    def test_dataclass(self):
        assert h(Line) == {"type": "object", "additionalProperties": False,
                           "properties": {"sku": {"type": "string"}, "qty": {"type": "integer"}},
                           "required": ["sku"]}
        assert h(list[Line])["items"]["required"] == ["sku"]

    def test_annotated_description(self):
        assert h(Annotated[float, "in euros"]) == {"type": "number", "description": "in euros"}

    def test_unsupported_hints_name_the_place_and_the_fix(self, subtests: pytest.Subtests):
        for bad in (set, set[int], bytes, complex, object, typing.Callable[[int], int],
                    dict[int, str], tuple[int, str], list[Line] | Customer):
            with subtests.test(hint=bad):
                with pytest.raises(ToolDefinitionError) as cm:
                    h(bad)
                msg = str(cm.value)
                assert "f(): parameter 'x'" in msg
                assert "not supported" in msg
                assert "use str, int, float" in msg

    def test_unsupported_value_type_inside_dict_is_refused(self):
        with pytest.raises(ToolDefinitionError):
            h(dict[str, bytes])


class TestSignatures:
    def test_required_defaults_and_docstring(self):
        @tool(irreversible=True, cost=1, approve="amount > 50")
        def issue_refund(order_id: str, amount: float, reason: str = "", rush: bool = False) -> dict:
            """Refund part or all of an order."""
        t = issue_refund.tollgate_tool
        assert t.name == "issue_refund"
        assert t.description == "Refund part or all of an order."
        assert t.schema["required"] == ["order_id", "amount"]
        assert t.schema["properties"]["reason"] == {"type": "string", "default": ""}
        assert not t.schema["additionalProperties"]
        assert t.rules[0] == {"if": {"arg": "amount", "op": ">", "value": 50}, "effect": "approve",
                              "reason": "issue_refund needs approval when amount > 50"}
        assert t.rules[-1]["effect"] == "allow"
        assert t.irreversible

    def test_unannotated_parameter_is_any(self):
        def f(x, y: int):
            pass
        assert signature_schema(f)["properties"]["x"] == {}

    def test_varargs_and_positional_only_are_refused(self, subtests: pytest.Subtests):
        def f(*args: int):
            pass

        def g(**kw: int):
            pass

        def k(a: int, /):
            pass
        for fn in (f, g, k):
            with subtests.test(fn=fn.__name__), pytest.raises(ToolDefinitionError) as cm:
                signature_schema(fn)
            assert "%s()" % fn.__name__ in str(cm.value)

    def test_bad_hint_in_signature_names_function_and_parameter(self):
        def upload(blob: bytes):
            pass
        with pytest.raises(ToolDefinitionError) as cm:
            tool(upload)
        assert "upload(): parameter 'blob'" in str(cm.value)

    def test_bad_names_and_fields(self):
        def f():
            pass
        with pytest.raises(ToolDefinitionError):
            tool(name="1bad")(f)
        with pytest.raises(ToolDefinitionError):
            tool(cost=-1)(f)
        with pytest.raises(ToolDefinitionError):
            tool(timeout=0)(f)


class TestConditions:
    def test_translations(self):
        assert condition("amount <= 50", "t") == {"arg": "amount", "op": "<=", "value": 50}
        assert condition("customer.id != 7", "t") == {"arg": "customer.id", "op": "!=", "value": 7}
        assert condition("region in ['EU', 'US']", "t") == {"arg": "region", "op": "in", "value": ["EU", "US"]}
        assert condition("path.startswith('/srv/')", "t") == {"arg": "path", "op": "prefix", "value": "/srv/"}
        assert condition("a > 1 and (b == 'x' or c < 2)", "t") == {
            "all": [{"arg": "a", "op": ">", "value": 1},
                    {"any": [{"arg": "b", "op": "==", "value": "x"}, {"arg": "c", "op": "<", "value": 2}]}]}

    def test_refusals(self, subtests: pytest.Subtests):
        for bad in ("amount >", "not amount", "1 < amount < 5", "amount > other", "amount > 'x'",
                    "f(amount)", "amount is None", "region in 'EU'"):
            with subtests.test(expr=bad), pytest.raises(ToolDefinitionError):
                condition(bad, "t")

