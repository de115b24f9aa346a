"""tollgate_sdk.integrations.promptise without containers: the backend
answers the commands Promptise's CodeActionNode sends, hands a call to the
node's rendezvous and back, and refuses bad governance with the fix."""
import asyncio
import json
import threading

import pytest

pytest.importorskip("promptise")
from promptise.engine.code_action import _render_tools_module  # noqa: E402

from tollgate_sdk import InvalidArgument  # noqa: E402
from tollgate_sdk.integrations.promptise import (TollgateCodeAction,  # noqa: E402
                                                 parse_tools_module)


class FakeTool:
    def __init__(self, name, args):
        self.name, self.args, self.description = name, {a: {} for a in args}, name


def test_parse_tools_module_reads_the_nodes_own_rendering():
    src = _render_tools_module([FakeTool("get_order", ["order_id"]),
                                FakeTool("issue_refund", ["order_id", "amount"])], 30)
    assert parse_tools_module(src) == [("get_order", ["order_id"]),
                                       ("issue_refund", ["order_id", "amount"])]


def test_session_commands_and_the_rendezvous():
    async def go():
        tg = TollgateCodeAction()
        s = await tg()
        r = await s.execute("mkdir -p /workspace/_rpc")
        assert r.success
        await s.write_file("/workspace/program.py", "print(1)\n")
        assert await s.list_files("/workspace") == ["_rpc", "program.py"]
        assert (await s.execute("cat /workspace/program.py")).stdout == "print(1)\n"
        assert (await s.execute("cat /workspace/nope")).exit_code == 1
        bad = await s.execute("rm -rf /")
        assert bad.exit_code == 126 and "not a command it runs" in bad.stderr
        not_ca = await s.execute("python3 /workspace/program.py")
        assert not_ca.exit_code == 126 and "not a code-action program" in not_ca.stderr
        # A call tollgate allowed waits for the node's bridge loop to answer.
        space = tg.backend._spaces[s.container_id]
        got = {}
        t = threading.Thread(target=lambda: got.update(r=space.forward("get_order", {"order_id": "A"}, 5)))
        t.start()
        for _ in range(100):
            names = await s.list_files("/workspace/_rpc")
            if names:
                break
            await asyncio.sleep(0.01)
        (req,) = names
        assert json.loads(await s.read_file("/workspace/_rpc/" + req)) == {"tool": "get_order",
                                                                          "args": {"order_id": "A"}}
        rid = req[len("req_"):-len(".json")]
        await s.write_file("/workspace/_rpc/resp_%s.json" % rid, json.dumps({"result": {"id": "A"}}))
        await s.write_file("/workspace/_rpc/resp_%s.done" % rid, "")
        t.join(5)
        assert got["r"] == {"id": "A"}
        assert await s.list_files("/workspace/_rpc") == []
        await s.cleanup()
        assert s.container_id not in tg.backend._spaces
        tg.close()
    asyncio.run(go())


def test_governance_is_checked():
    with pytest.raises(InvalidArgument, match="no tools="):
        TollgateCodeAction(tools=[])
    with pytest.raises(InvalidArgument, match="unknown option.*aprove"):
        TollgateCodeAction(governance={"issue_refund": {"aprove": "amount > 5"}})
    tg = TollgateCodeAction(governance={"refund": {"deny": True}})
    with pytest.raises(InvalidArgument, match="governance names refund.*get_order"):
        tg._sandbox_for([("get_order", ["order_id"])])
    with pytest.raises(InvalidArgument, match="code-action options"):
        tg.graph(max_repairs=-1)
