"""Objects with LangChain's tool shape, taken as they are (no LangChain
import): name, description, args_schema (a pydantic model or a JSON
schema) or .args, invoke / ainvoke."""
import json
import socket

import pytest

from tollgate_sdk import InvalidArgument, Sandbox, ToolDefinitionError, ToolServer, as_tool


class FakeModel:
    """What pydantic v2's BaseModel class offers the adapter."""
    @classmethod
    def model_json_schema(cls):
        return {"title": "LookupInput", "type": "object",
                "properties": {"order_id": {"title": "Order Id", "type": "string"},
                               "region": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None},
                               "line": {"$ref": "#/$defs/Line"},
                               "when": {"type": "string", "format": "date-time"}},
                "required": ["order_id"],
                "$defs": {"Line": {"type": "object", "properties": {"sku": {"type": "string"}},
                                   "required": ["sku"], "title": "Line"}}}


class FakeV1Model:
    @classmethod
    def schema(cls):
        return {"title": "X", "type": "object", "properties": {"n": {"type": "integer"}}}


class ToolMessage:
    def __init__(self, content):
        self.content = content


class StructuredLike:
    """Shaped like langchain_core.tools.StructuredTool."""
    def __init__(self, name, description, args_schema, func=None, coroutine=None):
        self.name, self.description, self.args_schema = name, description, args_schema
        self.func, self.coroutine = func, coroutine

    def invoke(self, input, config=None):
        if self.func is None:
            raise NotImplementedError("StructuredTool does not support sync invocation.")
        return self.func(**input)

    async def ainvoke(self, input, config=None):
        if self.coroutine is None:
            return self.invoke(input)
        return await self.coroutine(**input)


class ArgsOnly:
    name = "echo_args"
    description = "Returns its input."
    args = {"text": {"type": "string"}}

    def invoke(self, input):
        return ToolMessage(json.dumps(input))


def call(path, tool, args):
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.connect(path)
        s.sendall((json.dumps({"v": 1, "call": "c", "tool": tool, "args": args}) + "\n").encode())
        s.shutdown(socket.SHUT_WR)
        buf = b""
        while chunk := s.recv(65536):
            buf += chunk
    return json.loads(buf)


class TestAdapter:
    def test_pydantic_v2_schema_is_translated_into_the_policy_subset(self):
        t = as_tool(StructuredLike("lookup", "Look an order up.", FakeModel,
                                   func=lambda **kw: {"found": kw["order_id"]}))
        assert t.name == "lookup"
        assert t.description == "Look an order up."
        assert t.source == "langchain"
        props = t.schema["properties"]
        assert props["region"] == {"type": ["string", "null"], "default": None}
        assert props["line"] == {"type": "object", "properties": {"sku": {"type": "string"}},
                                 "required": ["sku"], "title": "Line"}
        assert props["when"] == {"type": "string"}
        assert "$defs" not in t.schema
        assert t.schema["required"] == ["order_id"]
        assert not t.is_async

    def test_pydantic_v1_and_dict_schemas(self):
        t = as_tool(StructuredLike("v1", "", FakeV1Model, func=lambda n: n))
        assert t.schema["properties"] == {"n": {"type": "integer"}}
        t = as_tool(StructuredLike("d", "", {"type": "object", "properties": {"q": {"type": "string"}}},
                                   func=lambda q: q))
        assert t.schema["properties"] == {"q": {"type": "string"}}

    def test_args_only_object_and_tool_message_result(self):
        t = as_tool(ArgsOnly())
        assert t.schema == {"type": "object", "properties": {"text": {"type": "string"}}}
        assert t.call({"text": "hi"}) == '{"text": "hi"}'

    def test_async_only_tool_uses_ainvoke(self):
        async def coro(order_id):
            return {"async": order_id}
        t = as_tool(StructuredLike("alookup", "", FakeModel, coroutine=coro))
        assert t.is_async
        with ToolServer([t]) as srv:
            assert call(srv.path, "alookup", {"order_id": "A-1"}) == {"ok": True, "result": {"async": "A-1"}}

    def test_served_sync_tool_and_its_errors(self):
        def f(order_id, **_):
            if order_id == "bad":
                raise KeyError(order_id)
            return {"found": order_id}
        t = as_tool(StructuredLike("lookup", "", FakeModel, func=f), irreversible=True, approve="order_id == 'A-9'")
        assert t.irreversible
        assert t.rules[0]["if"] == {"arg": "order_id", "op": "==", "value": "A-9"}
        with ToolServer([t]) as srv:
            assert call(srv.path, "lookup", {"order_id": "A-1"}) == {"ok": True, "result": {"found": "A-1"}}
            r = call(srv.path, "lookup", {"order_id": "bad"})
            assert r["ok"] is False
            assert "KeyError" in r["error"]

    def test_a_sandbox_takes_them_with_functions(self):
        def plain(x: int) -> int:
            return x
        sb = Sandbox(tools=[plain, ArgsOnly()])
        assert [t.name for t in sb.tools] == ["plain", "echo_args"]

    def test_shapes_that_are_refused(self):
        class NoSchema:
            name = "n"
            args_schema = 42

            def invoke(self, x):
                return x
        with pytest.raises(ToolDefinitionError):
            as_tool(NoSchema())
        with pytest.raises(ToolDefinitionError):
            as_tool(42)
        bad = {"type": "object", "properties": {"x": {"oneOf": [{"type": "object", "properties": {"a": {}}},
                                                                {"type": "array", "items": {}}]}}}
        with pytest.raises(ToolDefinitionError):
            as_tool(StructuredLike("o", "", bad, func=lambda **k: k))
        with pytest.raises(InvalidArgument):
            Sandbox(tools=[ArgsOnly(), ArgsOnly()])

