"""How a backend tells that the program's screen has settled: the display's change windows,
with what the program's work says (its CPU and its database's, its timers, a rescan or a
page it still owes), and for the first screen of a reset, a region that must be drawn."""
from __future__ import annotations

import math
import re
import time
from urllib.parse import urlsplit

from clinigym.core.errors import WaitTimeout
from clinigym.runtime import procfs
from clinigym.runtime.browser import DevToolsError
from clinigym.runtime.busy import BusyMeter, Hold
from clinigym.runtime.database_cpu import DatabaseCpu
from clinigym.runtime.display import Frame


class Settling:
    """Mixed into `Backend`, whose program, display and processes it reads."""
    _database_cpu: DatabaseCpu | None = None

    def first_screen(self) -> Frame:
        """The settled first screen of a reset."""
        frame, _ = self.settle(idle_quiet=self.app.settle.first_idle_quiet)
        ready = self.app.processes[-1].ready
        if ready.painted:
            # Some programs show their window black for seconds while they load (and may unmap
            # it once more), or their panes empty while they ask their server for what to show:
            # a quiet plain screen is not the settled first screen.
            x1, y1, x2, y2 = ready.painted
            deadline = time.monotonic() + ready.timeout
            while plain(frame.rgb[y1:y2, x1:x2]):
                if time.monotonic() > deadline:
                    raise WaitTimeout(f"{self.app.name}: nothing drawn in {ready.painted} "
                                      f"after {ready.timeout:g}s")
                frame, _ = self.settle(since=frame)
        return frame

    def settle(self, since: Frame | None = None, idle_quiet: float | None = None) -> tuple[Frame, bool]:
        s = self.app.settle
        idle_quiet = idle_quiet or s.idle_quiet
        timers = self.next_wake if s.timer_horizon else None
        busy = BusyMeter(self.work_seconds, idle_quiet, s.idle_cpu, next_wake=timers,
                         horizon=s.timer_horizon or math.inf) if idle_quiet else None
        owed = [p for p in (self.rescan and self.rescan.pending, s.page_busy and self._page_busy) if p]
        hold = Hold(lambda: any(p() for p in owed)) if owed else None
        return self.display.wait_settled(s.quiet, s.timeout, s.min_changed, since=since, busy=busy, hold=hold)

    def _page_busy(self) -> bool:
        """Whether the page says its own work is under way (`settle.page_busy`); a page that
        cannot answer (the browser gone, a page between documents) holds nothing: the
        windows alone decide, as for any program."""
        try:
            return bool(self.dom_client().evaluate(self.app.settle.page_busy))
        except DevToolsError:
            return False

    def work_seconds(self) -> float:
        """What tells whether the program still works (a counter, like `cpu_seconds`): its
        CPU seconds and, with a `database`, those the server spends on that database."""
        if self.app.database and self._database_cpu is None:
            self._database_cpu = DatabaseCpu(urlsplit(self.render(self.app.database)).path.lstrip("/"))
        return self.cpu_seconds() + (self._database_cpu() if self._database_cpu else 0.0)

    def next_wake(self) -> float | None:
        """Seconds until a process of the program or its display wakes by itself at the
        latest (`procfs.next_wake`, with the program's futex and ignore settings)."""
        s = self.app.settle
        ignore = re.compile(s.timer_ignore) if s.timer_ignore else None
        wakes = [w for pid in self.pids() if (w := procfs.next_wake(pid, s.timer_futex, ignore)) is not None]
        return min(wakes, default=None)


def plain(region) -> bool:
    """Whether an image region is one colour: nothing drawn in it yet."""
    return not (region != region[:1, :1]).any()
