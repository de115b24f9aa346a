"""What a session cell's two paths share: the cell channel (_cells.py)
and `tollgate exec` (_session.py) differ in how the code reaches the
interpreter and how its answer comes back, not in what is counted before
the cell, how its memory is watched, or how its Result is made."""
from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Literal, NoReturn

from . import _audit as audit, _oom as oom_watch
from ._errors import CellTimeout, ProgramFailed

if TYPE_CHECKING:
    from ._sandbox import Result
    from ._session import Session


class Cell:
    """One cell of a session, from before it runs to its Result."""

    def __init__(self, session: Session, cid: str, timeout: float, check: bool) -> None:
        sb = self.sb = session.sb
        self.session, self.cid, self.timeout, self.check = session, cid, timeout, check
        # The cell's calls are those the audit log gains after this.
        log = os.path.join(sb.audit_dir, cid + ".jsonl")
        self.first = len(audit.calls_of_last_run(audit.read_records(log)))
        session.cells += 1
        self.memwatch = oom_watch.Watch(cid, sb.runtime)

    def _ran_out_of_memory(self) -> bool:
        oom = self.memwatch.killed()
        self.memwatch.close()
        return oom

    def interpreter_gone(self, out: str, err: str, status: int, lost: bool) -> NoReturn:
        """The interpreter gave no answer (a cell ended it, the OOM killer,
        a kill, or it never answered in time): the session is closed and
        the cell fails."""
        oom = self._ran_out_of_memory()
        sb = self.sb
        self.session.close()
        result = sb._result(self.cid, out, err, status, lost, sb.policy, first=self.first)
        if oom:
            result.oom_killed, result.memory_limit = True, sb.memory_text()
            result.stderr += ("\ntollgate_sdk: the session ran out of memory and was killed (memory "
                              "limit %s; Sandbox(memory=...) raises it); the session is closed\n"
                              % result.memory_limit)
            raise ProgramFailed(result)
        if lost:
            raise CellTimeout(result, self.timeout, "lost")
        result.stderr += ("\ntollgate_sdk: the session's interpreter ended (a cell called os._exit, "
                          "or the container stopped); the session is closed\n")
        raise ProgramFailed(result)

    def answered(self, out: str, err: str, status: int, answer: dict[str, Any],
                 cuts: tuple[int, int], warnings: list[str]) -> Result:
        """The cell's Result from the interpreter's answer (its timed_out
        and abandoned); with check, CellTimeout or ProgramFailed."""
        self._ran_out_of_memory()
        sb = self.sb
        timed_out = bool(answer.get("timed_out"))
        result = sb._result(self.cid, out, err, status, timed_out, sb.policy, first=self.first)
        result.stdout_cut, result.stderr_cut = cuts
        result.warnings = warnings
        if timed_out:
            how: Literal["abandoned", "interrupted"] = "abandoned" if answer.get("abandoned") else "interrupted"
            result.timeout_how = how
            if self.check:
                raise CellTimeout(result, self.timeout, how)
            return result
        if self.check and status != 0:
            raise ProgramFailed(result)
        return result
