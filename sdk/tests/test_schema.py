"""Schema derivation: every supported hint, and a clear error for the rest."""
import dataclasses
import typing
import unittest
from typing import Annotated, Any, Literal, Optional, TypedDict

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


class Hints(unittest.TestCase):
    def test_scalars(self):
        self.assertEqual(h(str), {"type": "string"})
        self.assertEqual(h(int), {"type": "integer"})
        self.assertEqual(h(float), {"type": "number"})
        self.assertEqual(h(bool), {"type": "boolean"})
        self.assertEqual(h(type(None)), {"type": "null"})
        self.assertEqual(h(Any), {})

    def test_lists(self):
        self.assertEqual(h(list), {"type": "array"})
        self.assertEqual(h(list[int]), {"type": "array", "items": {"type": "integer"}})
        self.assertEqual(h(typing.List[str]), {"type": "array", "items": {"type": "string"}})
        self.assertEqual(h(tuple[float, ...]), {"type": "array", "items": {"type": "number"}})
        self.assertEqual(h(list[list[str]]),
                         {"type": "array", "items": {"type": "array", "items": {"type": "string"}}})

    def test_dicts(self):
        self.assertEqual(h(dict), {"type": "object"})
        self.assertEqual(h(dict[str, int]), {"type": "object"})
        self.assertEqual(h(typing.Dict[str, Any]), {"type": "object"})

    def test_optional_and_unions(self):
        self.assertEqual(h(Optional[str]), {"type": ["string", "null"]})
        self.assertEqual(h(int | None), {"type": ["integer", "null"]})
        self.assertEqual(h(int | str), {"type": ["integer", "string"]})
        self.assertEqual(h(Optional[list[int]]), {"type": ["array", "null"], "items": {"type": "integer"}})

    def test_literal(self):
        self.assertEqual(h(Literal["EU", "US"]), {"enum": ["EU", "US"], "type": "string"})
        self.assertEqual(h(Literal[1, "a"]), {"enum": [1, "a"]})
        self.assertEqual(h(Optional[Literal["a"]]), {"enum": ["a", None], "type": ["string", "null"]})

    def test_typeddict(self):
        self.assertEqual(h(Customer), {"type": "object", "additionalProperties": False,
                                       "properties": {"id": {"type": "integer"}, "name": {"type": "string"}},
                                       "required": ["id", "name"]})
        self.assertNotIn("required", h(PartialCustomer))

    def test_dataclass(self):
        self.assertEqual(h(Line), {"type": "object", "additionalProperties": False,
                                   "properties": {"sku": {"type": "string"}, "qty": {"type": "integer"}},
                                   "required": ["sku"]})
        self.assertEqual(h(list[Line])["items"]["required"], ["sku"])

    def test_annotated_description(self):
        self.assertEqual(h(Annotated[float, "in euros"]), {"type": "number", "description": "in euros"})

    def test_unsupported_hints_name_the_place_and_the_fix(self):
        for bad in (set, set[int], bytes, complex, object, typing.Callable[[int], int],
                    dict[int, str], tuple[int, str], list[Line] | Customer):
            with self.subTest(hint=bad):
                with self.assertRaises(ToolDefinitionError) as cm:
                    h(bad)
                msg = str(cm.exception)
                self.assertIn("f(): parameter 'x'", msg)
                self.assertIn("not supported", msg)
                self.assertIn("use str, int, float", msg)

    def test_unsupported_value_type_inside_dict_is_refused(self):
        with self.assertRaises(ToolDefinitionError):
            h(dict[str, bytes])


class Signatures(unittest.TestCase):
    def test_required_defaults_and_docstring(self):
        @tool(irreversible=True, cost=1, approve="amount > 50")
        def issue_refund(order_id: str, amount: float, reason: str = "", rush: bool = False) -> dict:
            """Refund part or all of an order."""
        t = issue_refund.tollgate_tool
        self.assertEqual(t.name, "issue_refund")
        self.assertEqual(t.description, "Refund part or all of an order.")
        self.assertEqual(t.schema["required"], ["order_id", "amount"])
        self.assertEqual(t.schema["properties"]["reason"], {"type": "string", "default": ""})
        self.assertFalse(t.schema["additionalProperties"])
        self.assertEqual(t.rules[0], {"if": {"arg": "amount", "op": ">", "value": 50}, "effect": "approve",
                                      "reason": "issue_refund needs approval when amount > 50"})
        self.assertEqual(t.rules[-1]["effect"], "allow")
        self.assertTrue(t.irreversible)

    def test_unannotated_parameter_is_any(self):
        def f(x, y: int):
            pass
        self.assertEqual(signature_schema(f)["properties"]["x"], {})

    def test_varargs_and_positional_only_are_refused(self):
        def f(*args: int):
            pass

        def g(**kw: int):
            pass

        def k(a: int, /):
            pass
        for fn in (f, g, k):
            with self.subTest(fn=fn.__name__), self.assertRaises(ToolDefinitionError) as cm:
                signature_schema(fn)
            self.assertIn("%s()" % fn.__name__, str(cm.exception))

    def test_bad_hint_in_signature_names_function_and_parameter(self):
        def upload(blob: bytes):
            pass
        with self.assertRaises(ToolDefinitionError) as cm:
            tool(upload)
        self.assertIn("upload(): parameter 'blob'", str(cm.exception))

    def test_bad_names_and_fields(self):
        def f():
            pass
        with self.assertRaises(ToolDefinitionError):
            tool(name="1bad")(f)
        with self.assertRaises(ToolDefinitionError):
            tool(cost=-1)(f)
        with self.assertRaises(ToolDefinitionError):
            tool(timeout=0)(f)


class Conditions(unittest.TestCase):
    def test_translations(self):
        self.assertEqual(condition("amount <= 50", "t"), {"arg": "amount", "op": "<=", "value": 50})
        self.assertEqual(condition("customer.id != 7", "t"), {"arg": "customer.id", "op": "!=", "value": 7})
        self.assertEqual(condition("region in ['EU', 'US']", "t"),
                         {"arg": "region", "op": "in", "value": ["EU", "US"]})
        self.assertEqual(condition("path.startswith('/srv/')", "t"),
                         {"arg": "path", "op": "prefix", "value": "/srv/"})
        self.assertEqual(condition("a > 1 and (b == 'x' or c < 2)", "t"),
                         {"all": [{"arg": "a", "op": ">", "value": 1},
                                  {"any": [{"arg": "b", "op": "==", "value": "x"},
                                           {"arg": "c", "op": "<", "value": 2}]}]})

    def test_refusals(self):
        for bad in ("amount >", "not amount", "1 < amount < 5", "amount > other", "amount > 'x'",
                    "f(amount)", "amount is None", "region in 'EU'"):
            with self.subTest(expr=bad), self.assertRaises(ToolDefinitionError):
                condition(bad, "t")


if __name__ == "__main__":
    unittest.main()
