"""Nothing outlives its owner, from the SDK's side (tests/integration/
test_reaper.sh drives it; docs/reliability.md).

Usage: lifetimes.py hold|start|forge BACKEND WORKDIR HOSTCONFIG   (as root)
  hold   a Sandbox with a warm pool of 2 and an open session; prints one
         JSON line {"pid", "state", "root"} when all three run, then
         sleeps until it is killed (the test kill -9s it)
  start  a Sandbox that starts (its start reaps what dead ones left) and
         closes
  forge  a warm-pool program that prints the run's trailer with exit 0
         and exits 3 (also after signalling its init and trying to open
         its memory): the Result must say 3; prints ok/FAIL lines
"""
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(REPO, "sdk"))
from tollgate_sdk import Sandbox, tool  # noqa: E402

mode, backend, work, host_config = sys.argv[1:5]
TG = os.environ.get("TG") or os.path.join(REPO, "build", "tollgate")
ROOTFS = os.environ.get("TOLLGATE_ROOTFS") or os.path.join(REPO, "build", "rootfs", "python")


def sandbox(warm, tools=()):
    return Sandbox(runtime=backend, image=ROOTFS, warm=warm, tollgate=TG, host_config=host_config,
                   audit_dir=os.path.join(work, "audit-" + backend), tools=list(tools))


@tool
def ping(n: int) -> int:
    """Return n: a tool, so that the holding program serves a socket."""
    return n


# Every forger starts alike: the run's nonce, which the program can read
# (job.json), and the trailer that claims exit 0.
FORGED_TRAILER = r'''
import json, os, signal, sys, time
raw = open("/app/.tollgate/job.json", "rb").read()
nonce = json.loads(raw.split(b"\n", 1)[0])["nonce"]
trailer = "\ntollgate-run:%s:%s\n" % (nonce, json.dumps({"exit": 0, "timed_out": False}))
'''

FORGE = FORGED_TRAILER + r'''
for f in (sys.stdout, sys.stderr):
    f.write("forged\n" + trailer)
    f.flush()
sys.exit(3)
'''

# The forger leaves a child behind that keeps printing forged trailers:
# the init must kill it before its own trailer.
FORGE_CHILD = FORGED_TRAILER + r'''
line = trailer.encode()
if os.fork() == 0:
    os.setsid()
    while True:
        os.write(2, line)
        os.write(1, line)
        time.sleep(0.001)
time.sleep(0.2)
os._exit(5)
'''

# The forger attacks the init itself: were the init ended (SIGINT's
# KeyboardInterrupt) or patched (/proc/1/mem) before its trailer, the
# container would stop with the forged trailer the last one.
FORGE_INIT = FORGED_TRAILER + r'''
for f in (sys.stdout, sys.stderr):
    f.write(trailer)
    f.flush()
try:
    os.close(os.open("/proc/1/mem", os.O_RDWR))
    print("mem: opened")
except OSError as e:
    print("mem: refused", e.errno)
for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGUSR1, signal.SIGALRM, signal.SIGSEGV):
    os.kill(1, s)
time.sleep(0.3)
os._exit(3)
'''


def check(name, cond, detail=""):
    print("%s - %s: %s%s" % ("ok" if cond else "FAIL", backend, name, (": " + str(detail)[-800:]) if not cond else ""))
    sys.stdout.flush()


if mode == "hold":
    sb = sandbox(2, tools=[ping])
    sb.start()
    sb._pool.wait_ready()
    s = sb.session()
    s.open()
    s.run("x = 1")
    assert sb._server is not None
    print(json.dumps({"pid": os.getpid(), "state": sb._state, "root": sb.root,
                      "socket": sb._server.path}), flush=True)
    while True:
        time.sleep(60)
elif mode == "start":
    sb = sandbox(0)
    sb.start()
    sb.close()
elif mode == "forge":
    with sandbox(1) as sb:
        sb.start()
        sb._pool.wait_ready()
        r = sb.run(FORGE, check=False)
        check("warm pool: a program that forges its trailer (exit 0) and exits 3 is reported as 3",
              r.exit_status == 3 and not r.timed_out, (r.exit_status, r.stdout))
        check("warm pool: the forged trailer is the program's output, nothing more",
              "forged" in r.stdout, r.stdout)
        sb._pool.wait_ready()
        r = sb.run(FORGE_CHILD, check=False)
        check("warm pool: a child left printing forged trailers does not change the status (5)",
              r.exit_status == 5 and not r.timed_out, (r.exit_status, r.stderr[-300:]))
        sb._pool.wait_ready()
        r = sb.run(FORGE_INIT, check=False)
        check("warm pool: a program that signals its init and forges its trailer is reported as 3, "
              "not timed out", r.exit_status == 3 and not r.timed_out, (r.exit_status, r.timed_out, r.stderr[-300:]))
        check("warm pool: the program cannot open the init's memory", "mem: refused" in r.stdout, r.stdout)
        sb._pool.wait_ready()
        r = sb.run("print('hi')", check=False)
        check("warm pool: an honest run after them exits 0 with its output", r.exit_status == 0 and
              r.stdout == "hi\n", (r.exit_status, r.stdout))
else:
    sys.exit("usage: lifetimes.py hold|start|forge BACKEND WORKDIR HOSTCONFIG")
