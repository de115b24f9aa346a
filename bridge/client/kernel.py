"""The SDK's runner inside the container (copied read-only to
/app/.tollgate/kernel.py; never imported on the host).  Standard library
only.  It reaches the host only through the bridge, like any program.

    kernel.py serve TOKEN        a session's init: one persistent interpreter
    kernel.py cell TOKEN         one cell (header line + code on stdin); its
                                 stdout/stderr become the cell's (SCM_RIGHTS)
    kernel.py files write PATH   stdin -> PATH (under /tmp)
    kernel.py files read PATH    PATH -> stdout
    kernel.py files list DIR     a JSON list of DIR's entries

The cell channel (issue 41): the session's interpreter also takes cells
and file operations from the host through the bridge area, without a
process per cell.  The host writes a request to /run/tollgate/cells/next.req
(read-only inside: nothing in the container can write a request); the
interpreter runs it, streams its output to <nonce>.out and .err in
/run/tollgate/calls/cells (capped; the host reads them as untrusted) and
ends with <nonce>.res and the <nonce>.done marker.  Requests are taken one
at a time, in the order the host wrote them; a request already taken (its
nonce) is not run again.

The session's interpreter listens on an abstract Unix socket named by a
random token (no file in /tmp for a cell to replace).  Cells run in its
main thread, one at a time, in one globals dict, so variables, imports and
open files persist.  A cell past its timeout gets KeyboardInterrupt
(SIGINT to the main thread, repeated for GRACE s); one that still runs is
abandoned: it keeps running, its output goes to /dev/null, and the next
cells run in a new thread with the same globals.
"""
import array
import builtins
import json
import linecache
import os
import signal
import socket
import stat
import subprocess
import sys
import threading
import time
import traceback

GRACE = 2.0          # seconds of repeated KeyboardInterrupt before abandoning
CELL_MAX = 8 << 20   # bytes of code per cell
FILE_MAX = 64 << 20  # bytes per files.write / files.read
AREA = "/tmp"        # the session's writable area
LIST_MAX = 10000     # entries per files.list
CELLS_IN = "/run/tollgate/cells"         # the host's requests (read-only here)
CELLS_OUT = "/run/tollgate/calls/cells"  # answers and output, for the host
CHANNEL_MAX = 4 << 20                    # payload bytes per channel request
STREAM_MAX = 8 << 20                     # bytes kept per output stream


def _line_buffered():
    # Not PYTHONUNBUFFERED: its unbuffered stdout drops the rest of a
    # short write (gVisor takes at most 64 KiB per pipe write), while a
    # BufferedWriter retries until every byte is written.
    import io
    for n in ("stdout", "stderr"):
        s = getattr(sys, n)
        try:
            if isinstance(getattr(s, "buffer", None), io.RawIOBase):  # -u: no buffered writer under it
                setattr(sys, n, io.TextIOWrapper(io.BufferedWriter(s.buffer), encoding=s.encoding,
                                                errors=s.errors, line_buffering=True))
            else:
                s.reconfigure(line_buffering=True)
        except (AttributeError, ValueError, OSError):
            pass


# ---- files ---------------------------------------------------------------------

def _walk(path, create_parents=False):
    """(dirfd, last name) for an absolute path under AREA, opening every
    directory with O_NOFOLLOW: a symbolic link anywhere on the way is
    refused, never followed."""
    if not isinstance(path, str) or not path.startswith(AREA + "/") or "\0" in path:
        raise ValueError("%r is not under %s (the session's writable area)" % (path, AREA))
    parts = path[len(AREA) + 1:].split("/")
    if any(p in ("", ".", "..") for p in parts):
        raise ValueError("%r must be a normalised absolute path (no '.', '..' or '//')" % path)
    fd = os.open(AREA, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        for p in parts[:-1]:
            try:
                nfd = open_at(fd, p, os.O_RDONLY | os.O_DIRECTORY)
            except FileNotFoundError:
                if not create_parents:
                    raise
                os.mkdir(p, 0o755, dir_fd=fd)
                nfd = open_at(fd, p, os.O_RDONLY | os.O_DIRECTORY)
            os.close(fd)
            fd = nfd
    except BaseException:
        os.close(fd)
        raise
    return fd, parts[-1]


class LinkRefused(OSError):
    pass


def open_at(dfd, name, flags, mode=0o644):
    """Open name in dfd, never through a symbolic link.  O_NOFOLLOW alone
    is not enough: gVisor follows a link opened with O_NOFOLLOW |
    O_DIRECTORY.  So the name is lstat'ed first, and the descriptor must
    be that same inode."""
    try:
        before = os.stat(name, dir_fd=dfd, follow_symlinks=False)
    except FileNotFoundError:
        if not flags & os.O_CREAT:
            raise
        before = None
    if before is not None and stat.S_ISLNK(before.st_mode):
        raise LinkRefused(40, "a symbolic link is on the way (%s); files never follow links" % name)
    fd = os.open(name, flags | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=dfd)
    st = os.fstat(fd)
    if before is not None and (st.st_dev, st.st_ino) != (before.st_dev, before.st_ino):
        os.close(fd)
        raise LinkRefused(40, "%s changed while it was opened; try again" % name)
    return fd


def _write_all(fd, data):
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _read_stdin(limit):
    chunks, n = [], 0
    while True:
        b = os.read(0, 1 << 20)
        if not b:
            return b"".join(chunks)
        n += len(b)
        if n > limit:
            raise ValueError("more than %d bytes" % limit)
        chunks.append(b)


def files_main(op, path):
    try:
        data = _read_stdin(FILE_MAX) if op == "write" else None
    except ValueError as e:
        sys.stderr.write("%s: %s\n" % (path, e))
        return 2
    return files_op(op, path, data, 1, sys.stderr.write, FILE_MAX)


def files_op(op, path, data, out, complain, limit, big=None):
    """One files operation: data is what write writes, out the descriptor
    read and list write to, complain(text) reports a failure; files larger
    than limit are refused (or, with big, answered big at once: the
    channel's caller then goes by `tollgate exec`).  0, or 2 after a
    complaint."""
    try:
        out_fd = out
        if op == "list":
            if path == AREA:
                fd = os.open(AREA, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
            else:
                dfd, name = _walk(path)
                try:
                    fd = open_at(dfd, name, os.O_RDONLY | os.O_DIRECTORY)
                finally:
                    os.close(dfd)
            out = []
            try:
                for name in sorted(os.listdir(fd))[:LIST_MAX]:
                    st = os.stat(name, dir_fd=fd, follow_symlinks=False)
                    kind = ("dir" if stat.S_ISDIR(st.st_mode) else "file" if stat.S_ISREG(st.st_mode)
                            else "link" if stat.S_ISLNK(st.st_mode) else "other")
                    out.append({"name": name, "path": path.rstrip("/") + "/" + name, "type": kind,
                                "size": st.st_size})
            finally:
                os.close(fd)
            _write_all(out_fd, json.dumps(out).encode())
            return 0
        dfd, name = _walk(path, create_parents=(op == "write"))
        try:
            if op == "write":
                if data is None or len(data) > limit:
                    raise ValueError("more than %d bytes" % limit)
                tmp = ".%s.tollgate-%d" % (name[:200], os.getpid())
                try:
                    st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
                    if not stat.S_ISREG(st.st_mode):  # a link, a directory: never replaced
                        raise ValueError("%s exists and is not a regular file" % path)
                except FileNotFoundError:
                    pass
                fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                             0o644, dir_fd=dfd)
                try:
                    _write_all(fd, data)
                finally:
                    os.close(fd)
                os.rename(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
                _write_all(out_fd, b"%d" % len(data))
                return 0
            if op == "read":
                fd = open_at(dfd, name, os.O_RDONLY | os.O_NONBLOCK)
                try:
                    st = os.fstat(fd)
                    if not stat.S_ISREG(st.st_mode):
                        raise ValueError("%s is not a regular file" % path)
                    if st.st_size > limit and big is not None:
                        return big
                    if st.st_size > limit:
                        raise ValueError("%s is %d bytes; files.read takes at most %d" % (path, st.st_size, limit))
                    left = limit + 1
                    while left > 0:
                        b = os.read(fd, min(left, 1 << 20))
                        if not b:
                            break
                        left -= len(b)
                        _write_all(out_fd, b)
                finally:
                    os.close(fd)
                return 0
        finally:
            os.close(dfd)
        raise ValueError("unknown files operation %r" % op)
    except (OSError, ValueError) as e:
        msg = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
        if isinstance(e, OSError) and e.errno == 40 and not isinstance(e, LinkRefused):
            msg = "a symbolic link is on the way; files never follow links"  # ELOOP from O_NOFOLLOW
        complain("%s: %s\n" % (path, msg))
        return 2


def _read_fd(fd, limit):
    chunks, n = [], 0
    while True:
        b = os.read(fd, 1 << 20)
        if not b:
            return b"".join(chunks)
        n += len(b)
        if n > limit:
            raise ValueError("more than %d bytes" % limit)
        chunks.append(b)


ANSWER_ROOM = 4096  # bytes set aside for a request's answer (.res)
COPY_WAIT = 5.0     # seconds a cell's output waits for room in a full area


def _reserve(path, flags, room):
    """The answer file, created with room bytes written (a tmpfs has no
    holes to fill later), or -1 when the area has no room now."""
    try:
        os.unlink(path)
    except OSError:
        pass
    try:
        fd = os.open(path, flags, 0o600)
    except OSError:
        return -1
    try:
        _write_all(fd, b" " * room)
    except OSError:
        os.close(fd)
        return -1
    return fd


class _Copier:
    """A pipe whose write end is a cell's stdout or stderr; copy() moves
    what is in it to a file in the channel's output directory (made at the
    first byte), keeping at most cap bytes (the area is a small tmpfs) and
    counting the rest.  No thread of its own: the channel's thread copies
    while it waits for the cell (a thread start costs ~3 ms under gVisor).
    finish() copies what is left and closes both ends, even if a process
    the cell left behind still holds the write end."""

    def __init__(self, path, cap):
        self.path, self.cap, self.total, self.kept, self.fd = path, cap, 0, 0, -1
        self.r, self.w = os.pipe2(os.O_CLOEXEC)
        os.set_blocking(self.r, False)

    def file(self):
        if self.fd < 0:
            self.fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        return self.fd

    def copy(self):
        while self.r >= 0:
            try:
                b = os.read(self.r, 1 << 16)
            except BlockingIOError:
                return
            except OSError:
                return
            if not b:
                return
            self.total += len(b)
            room = self.cap - self.kept
            if room > 0:
                self._keep(b[:room])

    def _keep(self, data):
        """Write data to the file.  A full area is waited for a while: a
        program flooding it fills it again as fast as the host empties it
        (every 50 ms while a request runs), and a cell's output written
        once and lost then was cut to nothing (its result said so).  After
        COPY_WAIT the rest is counted, not kept."""
        view = memoryview(data)
        deadline = None
        while view:
            try:
                n = os.write(self.file(), view)
            except OSError:
                now = time.monotonic()
                deadline = deadline or now + COPY_WAIT
                if now >= deadline:
                    self.kept = self.cap
                    return
                time.sleep(0.01)
                continue
            view = view[n:]
            self.kept += n

    def finish(self):
        if self.w >= 0:
            os.close(self.w)
            self.w = -1
        self.copy()
        if self.r >= 0:
            os.close(self.r)
            self.r = -1
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


# ---- the session's interpreter --------------------------------------------------

def _print_cell_exc():
    """The traceback from the cell's own frames on (not the kernel's)."""
    etype, e, tb = sys.exc_info()
    te = traceback.TracebackException(etype, e, tb)
    te.stack = traceback.StackSummary.from_list([f for f in te.stack if f.filename != __file__])
    sys.stderr.write("".join(te.format()))


class _Job:
    def __init__(self, n, code, out_fd, err_fd):
        self.n, self.code, self.out_fd, self.err_fd = n, code, out_fd, err_fd
        self.done = threading.Event()
        self.exit = 0
        self.interrupted = False


class Kernel:
    def __init__(self, token):
        self.token = token
        self.globals = {"__name__": "__main__", "__builtins__": builtins, "__doc__": None}
        self.jobs = []
        self.cv = threading.Condition()
        self.executor = threading.main_thread()
        self.current = None
        self.cells = 0
        self.in_cell = False
        self.devnull = os.open(os.devnull, os.O_RDWR | os.O_CLOEXEC)
        os.dup2(self.devnull, 0)

    # -- executing (the executor thread: main, or a successor) --
    def execute_forever(self):
        # A late interrupt (the cell ended just as its timeout came) must
        # not end the executor: it is dropped here.
        while True:
            try:
                return self._execute_forever()
            except KeyboardInterrupt:
                self.in_cell = False

    def _execute_forever(self):
        me = threading.current_thread()
        while True:
            with self.cv:
                while not self.jobs:
                    self.cv.wait()
                if self.executor is not me:
                    return
                job = self.jobs.pop(0)
                self.current = job
            self.execute(job)
            with self.cv:
                if self.current is job:
                    self.current = None
            if self.executor is not me:
                return

    def execute(self, job):
        for s in (sys.stdout, sys.stderr):
            s.flush()
        os.dup2(job.out_fd, 1)
        os.dup2(job.err_fd, 2)
        name = "<cell %d>" % job.n
        linecache.cache[name] = (len(job.code), None, job.code.splitlines(True), name)
        try:
            code = compile(job.code, name, "exec")
            self.in_cell = True
            exec(code, self.globals)
            self.in_cell = False
        except SystemExit as e:
            self.in_cell = False
            job.exit = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
            if e.code is not None and not isinstance(e.code, int):
                print(e.code, file=sys.stderr)
        except KeyboardInterrupt:
            self.in_cell = False
            job.exit = 130
            _print_cell_exc()
        except BaseException:
            self.in_cell = False
            job.exit = 1
            _print_cell_exc()
        finally:
            self.in_cell = False
            try:
                sys.stdout.flush()
                sys.stderr.flush()
            except Exception:
                pass
            if self.current is job:  # not abandoned: give the cell's pipes back
                os.dup2(self.devnull, 1)
                os.dup2(self.devnull, 2)
            job.done.set()

    # -- serving (one thread per connection) --
    def serve(self):
        sys.argv = [""]  # as in an interactive interpreter; not the kernel's own arguments
        _line_buffered()
        signal.signal(signal.SIGINT, self._on_sigint)
        srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
        srv.bind("\0tollgate-kernel-" + self.token)
        srv.listen(16)
        os.dup2(self.devnull, 1)
        os.dup2(self.devnull, 2)
        threading.Thread(target=self.accept, args=(srv,), daemon=True).start()
        if os.path.isdir(CELLS_IN) and os.path.isdir(CELLS_OUT):
            threading.Thread(target=self.channel, name="tollgate-channel", daemon=True).start()
        self.execute_forever()
        threading.Event().wait()  # abandoned: a successor serves; stay alive

    def _on_sigint(self, signum, frame):
        if self.in_cell:
            raise KeyboardInterrupt

    def accept(self, srv):
        while True:
            conn, _ = srv.accept()
            threading.Thread(target=self.handle, args=(conn,), daemon=True).start()

    def handle(self, conn):
        fds = []
        try:
            data, anc, _, _ = conn.recvmsg(1 << 16, socket.CMSG_SPACE(2 * 4))
            for level, typ, raw in anc:
                if level == socket.SOL_SOCKET and typ == socket.SCM_RIGHTS:
                    a = array.array("i")
                    a.frombytes(raw[:len(raw) - len(raw) % 4])
                    fds += list(a)
            while b"\n" not in data:
                more = conn.recv(1 << 16)
                if not more:
                    return
                data += more
            head, rest = data.split(b"\n", 1)
            req = json.loads(head)
            need = int(req["len"])
            if need > CELL_MAX or len(fds) != 2:
                return
            buf = bytearray(rest)
            while len(buf) < need:
                more = conn.recv(min(1 << 20, need - len(buf)))
                if not more:
                    return
                buf += more
            code = bytes(buf).decode("utf-8", "replace")
            timeout = float(req.get("timeout") or 300)
            try:
                if req.get("shell"):
                    reply = self.shell(code, fds, timeout)
                else:
                    reply = self.cell(code, fds, timeout)
            except Exception as e:  # the session goes on; this cell failed
                reply = {"exit": 125, "error": "%s: %s" % (type(e).__name__, e)}
            conn.sendall((json.dumps(reply) + "\n").encode())
        except (OSError, ValueError, KeyError):
            pass
        finally:
            for fd in fds:
                try:
                    os.close(fd)
                except OSError:
                    pass
            conn.close()

    def shell(self, code, fds, timeout, pump=None):
        try:
            p = subprocess.Popen(["/bin/sh", "-c", code], stdin=self.devnull, stdout=fds[0], stderr=fds[1],
                                 start_new_session=True, close_fds=True)
        except OSError as e:
            _write_all(fds[1], ("sh: cannot run /bin/sh in this image (%s); build the rootfs with "
                                "bundles/rootfs/python.sh DIR --shell\n" % e.strerror).encode())
            return {"exit": 127}
        end = time.monotonic() + timeout
        try:
            while True:
                try:
                    rc = p.wait(timeout=min(0.01, max(0.0, end - time.monotonic())) if pump else timeout)
                    if pump:
                        pump()
                    return {"exit": rc}
                except subprocess.TimeoutExpired:
                    if pump:
                        pump()
                    if not pump or time.monotonic() >= end:
                        raise
        except subprocess.TimeoutExpired:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except OSError:
                pass
            p.wait()
            return {"exit": 137, "timed_out": True, "interrupted": True}

    @staticmethod
    def _wait(job, seconds, pump):
        """job.done.wait(seconds), calling pump() every 10 ms meanwhile
        and once at the end (the channel's output copier)."""
        if pump is None:
            return job.done.wait(seconds)
        end = time.monotonic() + seconds
        while True:
            done = job.done.wait(max(0.0, min(end - time.monotonic(), 0.01)))
            pump()
            if done or time.monotonic() >= end:
                return done

    def cell(self, code, fds, timeout, pump=None):
        with self.cv:
            self.cells += 1
            job = _Job(self.cells, code, fds[0], fds[1])
            self.jobs.append(job)
            self.cv.notify_all()
        if self._wait(job, timeout, pump):
            return {"exit": job.exit}
        deadline = time.monotonic() + GRACE
        while not job.done.is_set() and time.monotonic() < deadline:
            self.interrupt()
            self._wait(job, 0.25, pump)
        if job.done.is_set():
            return {"exit": job.exit, "timed_out": True, "interrupted": True}
        # It ignores KeyboardInterrupt: abandon it to its thread, give the
        # pipes back (its output goes to /dev/null from now on), and let a
        # new executor take the next cells with the same globals.
        with self.cv:
            if job.done.is_set():
                return {"exit": job.exit, "timed_out": True, "interrupted": True}
            self.current = None
            os.dup2(self.devnull, 1)
            os.dup2(self.devnull, 2)
            nxt = threading.Thread(target=self.execute_forever, name="tollgate-cells", daemon=True)
            self.executor = nxt
            nxt.start()
            self.cv.notify_all()
        return {"exit": 124, "timed_out": True, "abandoned": True}

    # -- the cell channel (one thread; the host sends one request at a time) --
    def channel(self):
        last = None
        wait, idle = 0.0001, time.monotonic()
        name = os.path.join(CELLS_IN, "next.req")
        while True:
            raw = None
            try:
                fd = os.open(name, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK)
                try:
                    raw = _read_fd(fd, CHANNEL_MAX + 4096)
                finally:
                    os.close(fd)
            except (OSError, ValueError):
                raw = None
            nonce = None
            if raw is not None:
                head = raw.split(b"\n", 1)[0]
                try:
                    req = json.loads(head)
                    nonce = req.get("nonce")
                except ValueError:
                    req = None
            if raw is None or not isinstance(nonce, str) or nonce == last:
                # Polled, as a bridge caller polls for its answer (no
                # event reaches gVisor for the host's writes); slower when
                # the session has been idle a while.
                time.sleep(wait)
                wait = min(wait * 1.5, 0.002 if time.monotonic() - idle < 5 else 0.02)
                continue
            last = nonce
            try:
                self.answer(req, raw[len(head) + 1:])
            except Exception:
                pass  # the host times this request out; the session goes on
            wait, idle = 0.0001, time.monotonic()

    def answer(self, req, payload):
        nonce = req["nonce"]
        if not (isinstance(nonce, str) and len(nonce) == 32 and all(c in "0123456789abcdef" for c in nonce)):
            return
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        cap = max(0, min(int(req.get("cap") or STREAM_MAX), STREAM_MAX))
        res = os.path.join(CELLS_OUT, nonce + ".res")
        # The answer's room is taken before any output: two streams kept
        # to their cap fill the area (16 MiB), and an answer that could not
        # be written then lost the session ("did not answer").
        res_fd = _reserve(res, flags, ANSWER_ROOM)
        copiers = [_Copier(os.path.join(CELLS_OUT, nonce + ext), cap) for ext in (".out", ".err")]
        reply = {}
        try:
            op = req.get("op")
            if op == "cell":
                code = payload.decode("utf-8", "replace")
                timeout = float(req.get("timeout") or 300)
                fds = [c.w for c in copiers]

                def pump():
                    for c in copiers:
                        c.copy()
                try:
                    reply = (self.shell if req.get("shell") else self.cell)(code, fds, timeout, pump)
                except Exception as e:
                    reply = {"exit": 125, "error": "%s: %s" % (type(e).__name__, e)}
            elif op == "files":
                errs = []
                path = req.get("path")
                data = payload if req.get("fop") == "write" else None
                reply["exit"] = files_op(req.get("fop"), path, data, copiers[0].file(), errs.append,
                                         CHANNEL_MAX, big=3)
                if errs:
                    _write_all(copiers[1].file(), "".join(errs).encode())
            else:
                reply = {"exit": 125, "error": "unknown operation"}
        finally:
            for c in copiers:
                c.finish()
        reply["out_total"], reply["err_total"] = copiers[0].total, copiers[1].total
        reply["nonce"] = nonce
        if isinstance(reply.get("error"), str):
            reply["error"] = reply["error"][:ANSWER_ROOM // 4]
        body = json.dumps(reply).encode()
        if res_fd >= 0:
            try:
                os.pwrite(res_fd, body, 0)
                os.ftruncate(res_fd, len(body))
            except OSError:
                os.close(res_fd)
                res_fd = -1
        # Without its room (the area was already full: another process
        # flooding it) the answer is retried for a while: the host empties
        # the area of everything but this request's.
        deadline = time.monotonic() + 30
        while True:
            try:
                if res_fd < 0:
                    try:
                        os.unlink(res)
                    except FileNotFoundError:
                        pass
                    res_fd = os.open(res, flags, 0o600)
                    try:
                        _write_all(res_fd, body)
                    except OSError:
                        os.close(res_fd)
                        res_fd = -1
                        raise
                # Closed before the host is told: once it has the answer
                # it may pause the sandbox, and a file of the bridge area
                # open then cannot be opened again by the restore.
                os.close(res_fd)
                res_fd = -1
                os.close(os.open(os.path.join(CELLS_OUT, nonce + ".done"), flags, 0o600))
                return
            except OSError:
                if time.monotonic() > deadline:
                    if res_fd >= 0:
                        os.close(res_fd)
                    raise
                time.sleep(0.01)

    def interrupt(self):
        ex = self.executor
        if not self.in_cell:
            return
        if ex is threading.main_thread():
            signal.pthread_kill(ex.ident, signal.SIGINT)
            return
        try:  # a successor thread: no signal reaches it, an async exception does
            import ctypes
            ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(ex.ident), ctypes.py_object(KeyboardInterrupt))
        except Exception:
            pass


def cell_main(token):
    """One cell: read the header line and code from stdin, hand them and
    this process's stdout/stderr to the session's interpreter, wait for its
    answer, and end with a trailer line on stderr carrying the nonce the
    host sent (which the cell never sees), so the host can tell the
    interpreter's verdict from anything the cell printed."""
    raw = _read_stdin(CELL_MAX + 4096)
    head, code = raw.split(b"\n", 1)
    hdr = json.loads(head)
    nonce = str(hdr.get("nonce", ""))
    reply = None
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
    deadline = time.monotonic() + 30
    while True:
        try:
            s.connect("\0tollgate-kernel-" + token)
            break
        except OSError:
            if time.monotonic() > deadline:
                reply = {"gone": True}
                break
            time.sleep(0.02)
    if reply is None:
        try:
            req = json.dumps({"len": len(code), "timeout": hdr.get("timeout"),
                              "shell": bool(hdr.get("shell"))}).encode() + b"\n"
            s.sendmsg([req], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [1, 2]))])
            s.sendall(code)
            buf = b""
            while b"\n" not in buf:
                b = s.recv(4096)
                if not b:
                    break
                buf += b
            reply = json.loads(buf.split(b"\n", 1)[0]) if b"\n" in buf else {"gone": True}
        except (OSError, ValueError):
            reply = {"gone": True}
    s.close()
    _write_all(2, b"\ntollgate-cell:" + nonce.encode() + b":" + json.dumps(reply).encode() + b"\n")
    return 0


# ---- a warm container's one run ---------------------------------------------------

JOB = "/app/.tollgate/job.json"  # written by the host (rename) when the run is taken


# The longest wait between two looks for the job.  A warm container
# waits for its claim for as long as the pool is idle, and under runsc's
# ptrace platform every look (an open that fails, a sleep) is a round of
# ptrace stops: with the init and its child both looking every 2 ms, one
# unclaimed warm container took 31.5 % of a core; with the init alone
# looking every 5 ms, 12.5 % (bench/sdkbench.py's warm_idle_cpu_pct,
# docs/performance.md).  A claim waits 1.5 ms more on average, within the
# warm runs' noise.
JOB_WAIT_MAX = 0.005


def _await_job():
    """Poll (as a bridge caller does: no event reaches gVisor for the
    host's writes) for the host's job file: (header dict, code bytes)."""
    wait = 0.0002
    while True:
        try:
            fd = os.open(JOB, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW)
            break
        except FileNotFoundError:
            time.sleep(wait)
            wait = min(wait * 1.3, JOB_WAIT_MAX)
    chunks = []
    while True:
        b = os.read(fd, 1 << 20)
        if not b:
            break
        chunks.append(b)
    os.close(fd)
    head, code = b"".join(chunks).split(b"\n", 1)
    return json.loads(head), code


def warm_main():
    """A warm container's init: fork the child that will run the job
    first (a fork costs milliseconds under gVisor: paid before the run is
    claimed, not after), then wait (polling, as a bridge caller does) for
    the host to write the job while the child waits on a pipe (a wait
    inside the sandbox, which costs nothing while it lasts); the child
    runs the job once (a fresh interpreter: a warm container is never
    reused); the parent enforces the job's timeout and ends stdout and
    stderr with a trailer line carrying the job's nonce and the child's
    exit status, then exits, which stops the container."""
    guarded_r, guarded_w = os.pipe()
    go_r, go_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(guarded_w)
        os.close(go_w)
        os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
        # Not one instruction of the program before the init guarded
        # itself (_guard_init): an fd of /proc/1/mem opened earlier would
        # stay usable after.
        ok = os.read(guarded_r, 1) == b"1"
        os.close(guarded_r)
        # Then the init's word that the job is there (EOF: the init is
        # gone or refused the job).
        ok = ok and os.read(go_r, 1) == b"g"
        os.close(go_r)
        if not ok:
            os._exit(125)
        hdr, code = _await_job()
        if hdr.get("shell"):
            try:
                os.execv("/bin/sh", ["sh", "-c", code.decode("utf-8", "replace")])
            except OSError as e:
                os.write(2, ("sh: cannot run /bin/sh in this image (%s); build the rootfs with "
                             "bundles/rootfs/python.sh DIR --shell\n" % e.strerror).encode())
                os._exit(127)
        _run_main(code.decode("utf-8", "replace"))
    os.close(guarded_r)
    os.close(go_r)
    unguarded = _guard_init()
    if not unguarded:
        os.write(guarded_w, b"1")
    os.close(guarded_w)
    hdr, _ = _await_job()
    if not unguarded:
        os.write(go_w, b"g")
    os.close(go_w)
    nonce = str(hdr.get("nonce", "")).encode()
    if unguarded:
        os.waitpid(pid, 0)
        verdict = json.dumps({"exit": 125, "timed_out": False}).encode()
        _write_all(2, ("tollgate: %s: the program was not run\n" % unguarded).encode())
        for fd in (1, 2):
            _write_all(fd, b"\ntollgate-run:" + nonce + b":" + verdict + b"\n")
        os._exit(125)
    timeout = float(hdr.get("timeout") or 300)
    deadline = time.monotonic() + timeout
    timed_out = []

    def expire(signum, frame):
        # SIGALRM from the program (kill(1, SIGALRM)) is not the timer.
        if time.monotonic() < deadline:
            signal.setitimer(signal.ITIMER_REAL, max(deadline - time.monotonic(), 0.001))
            return
        timed_out.append(True)
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, timeout)
    while True:
        try:
            _, st = os.waitpid(pid, 0)
            break
        except InterruptedError:
            continue
    signal.setitimer(signal.ITIMER_REAL, 0)
    if os.WIFEXITED(st):
        status = os.WEXITSTATUS(st)
    else:
        status = 128 + os.WTERMSIG(st)
    _end_the_rest()
    verdict = json.dumps({"exit": status, "timed_out": bool(timed_out)}).encode()
    for fd in (1, 2):
        try:
            _write_all(fd, b"\ntollgate-run:" + nonce + b":" + verdict + b"\n")
        except OSError:
            pass
    # The container's exit status is the program's, as the host sees it;
    # at once (no interpreter shutdown): the host waits for this exit.
    os._exit(status)


def _guard_init():
    """Keep the program (the child, same uid) from ending or changing the
    init before it writes the trailer: with the init gone the container
    stops and the program's own forged trailer would be the last one
    (issue 38, item 8).  Every signal the program could send is ignored
    (SIGINT's KeyboardInterrupt ended the init), except SIGCHLD and
    SIGALRM (whose handler checks the deadline itself); and the init is
    made non-dumpable, so that /proc/1/mem (open to a same-uid process,
    no ptrace needed) cannot be opened to patch it.  None, or why the
    init could not (the job is then refused, never run unguarded)."""
    keep = {signal.SIGCHLD, signal.SIGALRM, signal.SIGKILL, signal.SIGSTOP}
    for s in signal.valid_signals():
        if s not in keep:
            try:
                signal.signal(s, signal.SIG_IGN)
            except (OSError, ValueError):
                pass
    try:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(4, 0, 0, 0, 0) != 0:  # PR_SET_DUMPABLE, 0
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_DUMPABLE)")
    except (ImportError, OSError, AttributeError) as e:
        return "the warm container's init cannot make itself non-dumpable (%s)" % e
    return None


def _end_the_rest():
    """Kill and reap every other process of the container before the
    trailer is written.  The program can read the nonce (job.json stays
    in the read-only /app) and print a trailer of its own; the host takes
    the last trailer once the container has stopped, and this makes the
    last one ours: nothing of the program is left to write after it.  As
    pid 1 of the container's pid namespace, kill(-1) reaches exactly the
    container's other processes."""
    if os.getpid() != 1:
        return  # not the namespace's init: kill(-1) would reach further
    # Every process of the namespace is init's descendant, and orphans are
    # re-parented to it: no child left means nobody left.  A fork that
    # raced one kill(-1) meets the next.
    while True:
        try:
            os.kill(-1, signal.SIGKILL)
        except OSError:
            pass
        try:
            while os.waitpid(-1, os.WNOHANG)[0] > 0:
                pass
        except ChildProcessError:
            return
        time.sleep(0.001)


def _run_main(code):
    """The child: the program as __main__ from /app/main.py, as
    `python3 /app/main.py` would run it (tracebacks, exit status, atexit,
    threads joined at the end)."""
    sys.argv = ["/app/main.py"]
    sys.path[0] = "/app"
    _line_buffered()
    signal.signal(signal.SIGINT, signal.default_int_handler)
    g = {"__name__": "__main__", "__builtins__": builtins, "__doc__": None, "__file__": "/app/main.py"}
    status = 0
    try:
        exec(compile(code, "/app/main.py", "exec"), g)
    except SystemExit as e:
        status = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        if e.code is not None and not isinstance(e.code, int):
            print(e.code, file=sys.stderr)
    except BaseException:
        status = 1
        _print_cell_exc()
    sys.exit(status)


def main(argv):
    if len(argv) >= 2 and argv[0] == "serve":
        Kernel(argv[1]).serve()
        return 0
    if len(argv) >= 2 and argv[0] == "cell":
        return cell_main(argv[1])
    if argv == ["warm"]:
        return warm_main()
    if len(argv) == 3 and argv[0] == "files":
        return files_main(argv[1], argv[2])
    sys.stderr.write("usage: kernel.py serve TOKEN | cell TOKEN | files write|read|list PATH\n")
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
