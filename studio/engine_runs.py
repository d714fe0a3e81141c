"""Every engine run of the web process, bounded: `assemble` is the engine's, run within a deadline
(settings.STUDIO_ENGINE_DEADLINE_SECONDS) and with every failure turned into an `AssemblyError`, so a page, the API
and a list of many sessions answer a run that stalls or breaks the way they answer any refusal (a coded error, an
error row), and no request holds a worker until gunicorn's timeout kills it.

The deadline: a watchdog thread raises `DeadlinePassed` inside the thread that runs the engine (CPython's
`PyThreadState_SetAsyncExc`), at its next Python instruction, and again every REPEAT seconds until the run has
stopped (a raise that lands in a finalizer is ignored there; the cyclic collector waits during runs for the same
reason). A web process runs one engine call per request thread, so gunicorn's sync workers, runserver's threads and
the test client all work alike. The engine is pure Python, so that stops it wherever it
is; one C call already running (a single huge regex match) finishes first, and gunicorn's own timeout
(gunicorn.conf.py) stays the last resort. `DeadlinePassed` derives from BaseException so that no `except Exception`
in the engine swallows it. The engine's memo caches are written one dict operation at a time, so an interrupted run
leaves them consistent.
"""

from __future__ import annotations

import ctypes
import gc
import logging
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from django.conf import settings

from assembly import AssemblyError, AssemblyResult, api
from assembly.errors import CodedError
from studio.result_cache import through_cache

logger = logging.getLogger(__name__)
T = TypeVar("T")
DEFAULT_DEADLINE_SECONDS = 5.0


class DeadlinePassed(BaseException):  # noqa: N818 - a signal to stop, not an error a caller handles
    """Raised inside an engine run that passed its deadline."""


def deadline_seconds() -> float:
    return float(getattr(settings, "STUDIO_ENGINE_DEADLINE_SECONDS", DEFAULT_DEADLINE_SECONDS))


def deadline_error(seconds: float) -> AssemblyError:
    return AssemblyError("ENGINE_DEADLINE_EXCEEDED", f"the assembly took longer than {seconds:g} s and was stopped "
                         f"(STUDIO_ENGINE_DEADLINE_SECONDS); shorten the history or the resources, or simplify the "
                         f"macros and patterns", status=503, detail={"limit_seconds": seconds})


def failure_error(error: Exception) -> AssemblyError:
    return AssemblyError("ENGINE_FAILED", f"the assembly failed on this input ({type(error).__name__}: "
                         f"{str(error)[:200]})", status=422, detail={"exception": type(error).__name__})


def _raise_in(thread_id: int, exception: type[BaseException] | None) -> None:
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread_id),
                                               ctypes.py_object(exception) if exception else None)


class _Watchdog(threading.Thread):
    """Past `seconds`, raises DeadlinePassed in the thread `target` every REPEAT seconds until `stop()`: a raise that
    lands in a finalizer (the collector's, a __del__) is ignored there, and the next one stops the run."""

    REPEAT = 0.05

    def __init__(self, target: int, seconds: float):
        super().__init__(daemon=True, name="engine-deadline")
        self.target, self.seconds = target, seconds
        self.guard, self.finished, self.fired = threading.Lock(), threading.Event(), False

    def run(self) -> None:
        wait = self.seconds
        while not self.finished.wait(wait):
            with self.guard:
                if self.finished.is_set():
                    return
                self.fired = True
                _raise_in(self.target, DeadlinePassed)
            wait = self.REPEAT

    def stop(self) -> None:
        """After this no DeadlinePassed arrives: the watchdog is finished and a pending one is cleared."""
        with self.guard:
            self.finished.set()
            if self.fired:
                _raise_in(self.target, None)


def _stop_surely(watchdog: _Watchdog) -> None:
    # A DeadlinePassed may land while stopping (the raises are REPEAT apart, so at most one): stop again.
    for _attempt in range(3):
        try:
            watchdog.stop()
            return
        except DeadlinePassed:
            continue


_collector = {"pauses": 0, "resume": False}
_collector_guard = threading.Lock()


def _pause_collector(pause: bool) -> None:
    """The cyclic collector waits while engine runs are on (their garbage is collected after them), so that a
    deadline lands in the run rather than in a finalizer the collector calls."""
    with _collector_guard:
        _collector["pauses"] += 1 if pause else -1
        if pause and _collector["pauses"] == 1:
            _collector["resume"] = gc.isenabled()
            gc.disable()
        elif not pause and _collector["pauses"] == 0 and _collector["resume"]:
            gc.enable()


def within_deadline(run: Callable[[], T], seconds: float | None = None) -> T:
    """`run()`'s answer, or `deadline_error` once it has run `seconds`; any other exception that is not a coded
    refusal becomes `failure_error` (logged with its traceback)."""
    seconds = deadline_seconds() if seconds is None else seconds
    watchdog = _Watchdog(threading.get_ident(), seconds)
    _pause_collector(True)
    paused = True
    try:
        try:
            watchdog.start()
            return run()
        finally:
            _stop_surely(watchdog)  # no DeadlinePassed arrives after it
            _pause_collector(False)
            paused = False
    except DeadlinePassed:
        _stop_surely(watchdog)
        if paused:  # it landed before the `finally` above could finish
            _pause_collector(False)
        logger.warning("engine run stopped at its deadline (%s s)", seconds)
        raise deadline_error(seconds) from None
    except CodedError:
        raise
    except Exception as error:  # any engine failure: one request's (or one list row's) coded error, never a 500
        logger.exception("engine run failed")
        raise failure_error(error) from None


def assemble(request: dict[str, Any] | Any) -> AssemblyResult:
    """The engine's `assemble(request)`, bounded (see the module's docstring); a request answered before is read
    from the studio's result cache (studio/result_cache.py), so the engine runs once per distinct request."""
    # `api.assemble` is looked up per call: a test may count the runs
    return through_cache(request, lambda: within_deadline(lambda: api.assemble(request)))
