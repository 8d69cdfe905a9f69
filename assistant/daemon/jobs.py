"""Scheduled jobs (SPEC D2): a prompt run through the loop on a cron or interval schedule.

Definitions live in APScheduler's SQLAlchemy job store (`jobs.db` in the data directory),
so they survive restarts; every job coalesces missed runs, never overlaps itself
(`max_instances=1`) and may run up to `[jobs] misfire_grace_s` late. Triggers carry the
scheduler's zone (`[jobs] timezone`, else the machine's), never a naive datetime.

The run history (one row per run: started, finished, status, stop reason, turn) lives in
the shared SQLite database. A run that was `running` when the process died is marked
`interrupted` at the next start.

The store keeps a textual reference to `run_scheduled_job` and the job's name and prompt.
The daemon's `QueueExecutor` (an APScheduler executor) hands each due run to the work
queue and passes the daemon's `JobRunner` in, so the function needs no global registry.
"""

from __future__ import annotations

import logging
import re
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import Future
from datetime import UTC, datetime, timedelta, tzinfo
from pathlib import Path
from typing import Any

import sqlite_utils
from apscheduler.events import (
    EVENT_JOB_ERROR,
    EVENT_JOB_EXECUTED,
    EVENT_JOB_MISSED,
    JobExecutionEvent,
)
from apscheduler.executors.base import BaseExecutor
from apscheduler.job import Job
from apscheduler.triggers.base import BaseTrigger
from apscheduler.triggers.cron import CronTrigger
from apscheduler.triggers.interval import IntervalTrigger

from assistant.config import Settings
from assistant.errors import CommandError
from memory.db import Database, Migrations, describe_sqlite_error
from memory.errors import StorageError

log = logging.getLogger(__name__)

JOBS_FILE = "jobs.db"
JOB_FUNCTION = "assistant.daemon.jobs:run_scheduled_job"
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
ANSWER_CHARS = 2000

migrations = Migrations("jobs")


@migrations
def m001_job_runs(db: sqlite_utils.Database) -> None:
    db.execute(
        "CREATE TABLE job_runs (id INTEGER PRIMARY KEY AUTOINCREMENT, job TEXT NOT NULL, "
        "session TEXT NOT NULL, manual INTEGER NOT NULL DEFAULT 0, scheduled_for REAL, "
        "started REAL NOT NULL, finished REAL, status TEXT NOT NULL, stop_reason TEXT, "
        "outcome TEXT, error TEXT, turn_id TEXT)"
    )
    db.execute("CREATE INDEX job_runs_by_job ON job_runs (job, started)")


def _iso(epoch: float | None) -> str | None:
    if epoch is None:
        return None
    return datetime.fromtimestamp(epoch, UTC).astimezone().isoformat(timespec="seconds")


class RunHistory:
    def __init__(self, database: Database) -> None:
        self.database = database
        database.migrate(migrations)

    def start(self, job: str, session: str, *, manual: bool, scheduled_for: datetime | None) -> int:
        return self.database.write(
            "INSERT INTO job_runs (job, session, manual, scheduled_for, started, status) "
            "VALUES (?, ?, ?, ?, ?, 'running')",
            (
                job,
                session,
                manual,
                scheduled_for.timestamp() if scheduled_for else None,
                time.time(),
            ),
        )

    def finish(
        self,
        run_id: int,
        status: str,
        *,
        stop_reason: str | None = None,
        outcome: str | None = None,
        error: str | None = None,
        turn_id: str | None = None,
    ) -> None:
        self.database.write(
            "UPDATE job_runs SET finished = ?, status = ?, stop_reason = ?, outcome = ?, "
            "error = ?, turn_id = ? WHERE id = ?",
            (time.time(), status, stop_reason, outcome, error, turn_id, run_id),
        )

    def mark_interrupted(self) -> int:
        """Runs left `running` by a process that died (D7); their turn, if it started."""
        return self.database.update(
            "UPDATE job_runs SET status = 'interrupted', error = 'the daemon stopped while "
            "this run was in progress', turn_id = (SELECT t.id FROM turns t WHERE "
            "t.session = job_runs.session ORDER BY t.started_at DESC LIMIT 1) "
            "WHERE status = 'running'"
        )

    def get(self, run_id: int) -> dict[str, Any]:
        return self._rows("WHERE id = ?", [run_id], 1)[0]

    def recent(self, job: str | None = None, limit: int = 20) -> list[dict[str, Any]]:
        where, params = ("WHERE job = ?", [job]) if job else ("", [])
        return self._rows(where, params, limit)

    def last(self, job: str) -> dict[str, Any] | None:
        rows = self._rows("WHERE job = ?", [job], 1)
        return rows[0] if rows else None

    def _rows(self, where: str, params: list[Any], limit: int) -> list[dict[str, Any]]:
        rows = self.database.query(
            f"SELECT * FROM job_runs {where} ORDER BY started DESC, id DESC LIMIT ?",
            [*params, limit],
        )
        for row in rows:
            row["manual"] = bool(row["manual"])
            for key in ("scheduled_for", "started", "finished"):
                row[key] = _iso(row[key])
        return rows


# -- schedules ---------------------------------------------------------------------------

_UNITS = {"s": 1, "sec": 1, "m": 60, "min": 60, "h": 3600, "d": 86400, "w": 604800}
_EVERY = re.compile(r"(\d+(?:\.\d+)?)\s*(sec|min|s|m|h|d|w)", re.IGNORECASE)
_CRON_DAYS = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")


def parse_every(text: str) -> float:
    """'2s', '15m', '1h30m', '1d' -> seconds."""
    compact = text.strip().lower().replace(" ", "")
    parts = _EVERY.findall(compact)
    if not parts or "".join(n + u for n, u in parts) != compact:
        raise CommandError(
            "BAD_SCHEDULE", f"cannot read the interval {text!r}; write it like 30s, 15m, 1h30m, 1d"
        )
    seconds = sum(float(n) * _UNITS[u] for n, u in parts)
    if seconds < 1:
        raise CommandError("BAD_SCHEDULE", "the interval must be at least 1 second")
    return seconds


def _cron_day(token: str) -> int:
    if token.isdigit() and int(token) <= 7:
        return int(token)
    if token[:3] in _CRON_DAYS:
        return _CRON_DAYS.index(token[:3])
    raise ValueError(f"not a day of the week: {token!r}")


def crontab_weekdays(field: str) -> str:
    """Crontab counts weekdays from Sunday = 0 (and 7); APScheduler 3 from Monday = 0.
    Spell the days out as names, which both read the same way."""
    if field == "*":
        return field
    days: set[int] = set()
    for part in field.lower().split(","):
        body, _, step = part.partition("/")
        if body == "*":
            low, high = 0, 6
        elif "-" in body:
            first, last = body.split("-", 1)
            low, high = _cron_day(first), _cron_day(last)
        else:
            low = high = _cron_day(body)
            high = 6 if step else high
        days.update(day % 7 for day in range(low, high + 1, int(step) if step else 1))
    return ",".join(_CRON_DAYS[day] for day in sorted(days))


def make_trigger(*, cron: str | None, every: str | None, zone: tzinfo) -> BaseTrigger:
    if bool(cron) == bool(every):
        raise CommandError("BAD_SCHEDULE", "give exactly one of --cron EXPR or --every DURATION")
    if every:
        return IntervalTrigger(seconds=parse_every(every), timezone=zone)
    assert cron is not None
    fields = cron.split()
    if len(fields) != 5:
        raise CommandError(
            "BAD_SCHEDULE",
            f"a cron expression has 5 fields (minute hour day month weekday), got {len(fields)}",
        )
    minute, hour, day, month, weekday = fields
    try:
        return CronTrigger(
            minute=minute,
            hour=hour,
            day=day,
            month=month,
            day_of_week=crontab_weekdays(weekday),
            timezone=zone,
        )
    except ValueError as exc:
        raise CommandError(
            "BAD_SCHEDULE", f"cannot read the cron expression {cron!r}: {exc}"
        ) from None


def _seconds_text(seconds: float) -> str:
    parts, rest = [], int(seconds)
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        if rest >= size:
            parts.append(f"{rest // size}{unit}")
            rest %= size
    return "".join(parts) or f"{seconds:g}s"


def describe_trigger(trigger: BaseTrigger) -> str:
    if isinstance(trigger, IntervalTrigger):
        return f"every {_seconds_text(trigger.interval.total_seconds())}"
    if isinstance(trigger, CronTrigger):
        fields = {f.name: str(f) for f in trigger.fields}
        names = ("minute", "hour", "day", "month", "day_of_week")
        return "cron " + " ".join(fields[name] for name in names)
    return str(trigger)


def job_timezone(settings: Settings) -> tzinfo:
    if settings.jobs.timezone:
        from zoneinfo import ZoneInfo

        return ZoneInfo(settings.jobs.timezone)
    from tzlocal import get_localzone

    return get_localzone()


# -- the book of jobs ------------------------------------------------------------------------


class JobBook:
    """The job definitions, through a scheduler on the persistent store.

    The daemon starts it running with its `QueueExecutor`; a CLI command without a daemon
    starts it paused, which reads and writes the store but runs nothing.
    """

    def __init__(self, settings: Settings, executor: BaseExecutor | None = None) -> None:
        from apscheduler.jobstores.sqlalchemy import SQLAlchemyJobStore
        from apscheduler.schedulers.background import BackgroundScheduler

        self.zone = job_timezone(settings)
        self.path: Path = settings.home / JOBS_FILE
        self.scheduler = BackgroundScheduler(
            jobstores={"default": SQLAlchemyJobStore(url=f"sqlite:///{self.path}")},
            executors={"default": executor} if executor is not None else {},
            job_defaults={
                "coalesce": True,
                "max_instances": 1,
                "misfire_grace_time": settings.jobs.misfire_grace_s,
            },
            timezone=self.zone,
        )

    def start(self, *, paused: bool) -> None:
        """Open the store (creating its table); a file that is not a job store is named."""
        from sqlalchemy.exc import SQLAlchemyError

        try:
            self.scheduler.start(paused=paused)
        except SQLAlchemyError as exc:
            if self.scheduler.running:
                self.scheduler.shutdown(wait=False)
            raise StorageError(
                f"the job store: {describe_sqlite_error(self.path, getattr(exc, 'orig', exc))}"
            ) from None

    def shutdown(self) -> None:
        if self.scheduler.running:
            self.scheduler.shutdown(wait=False)

    def add(
        self,
        name: str | None,
        prompt: str,
        *,
        cron: str | None,
        every: str | None,
        write_scope: list[str] | None = None,
    ) -> dict[str, Any]:
        """`write_scope`: the vault folders its runs may write in (default: `[safety]
        write_scope`)."""
        name = name or f"job-{uuid.uuid4().hex[:6]}"
        if not NAME.match(name):
            raise CommandError(
                "BAD_NAME", f"a job name is 1-64 letters, digits, '.', '_' or '-': {name!r}"
            )
        if not prompt.strip():
            raise CommandError("BAD_PROMPT", "a job needs a prompt")
        trigger = make_trigger(cron=cron, every=every, zone=self.zone)
        kwargs: dict[str, Any] = {"prompt": prompt}
        if write_scope is not None:
            from assistant.config import write_scope as normalised_scope

            try:
                kwargs["write_scope"] = normalised_scope(write_scope)
            except ValueError as exc:
                raise CommandError("BAD_SCOPE", str(exc)) from None
        if self.scheduler.get_job(name) is not None:
            raise CommandError("JOB_EXISTS", f"there is already a job named {name!r}", 409)
        job = self.scheduler.add_job(
            JOB_FUNCTION, trigger, args=(name,), kwargs=kwargs, id=name, name=name
        )
        return self.describe(job)

    def remove(self, name: str) -> dict[str, Any]:
        job = self.find(name)
        described = self.describe(job)
        self.scheduler.remove_job(name)
        return described

    def find(self, name: str) -> Job:
        job = self.scheduler.get_job(name)
        if job is None:
            raise CommandError("NOT_FOUND", f"there is no job named {name!r}", 404)
        return job

    def list(self) -> list[dict[str, Any]]:
        return [self.describe(job) for job in self.scheduler.get_jobs()]

    def describe(self, job: Job) -> dict[str, Any]:
        next_run = getattr(job, "next_run_time", None)
        return {
            "name": job.id,
            "prompt": job.kwargs.get("prompt"),
            "write_scope": job.kwargs.get("write_scope"),
            "schedule": describe_trigger(job.trigger),
            "timezone": str(self.zone),
            "next_run": next_run.isoformat(timespec="seconds") if next_run else None,
        }


# -- running a job -----------------------------------------------------------------------------


def job_session(name: str) -> str:
    """`job-NAME-YYYYmmdd-HHMMSS-mmm`: each run its own session (D2)."""
    now = time.time()
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(now))
    return f"job-{name}-{stamp}-{int(now % 1 * 1000):03d}"


class JobRunner:
    """Runs one job's prompt as an unattended turn in its own session, with history."""

    def __init__(self, assistant: Any, history: RunHistory) -> None:
        self.assistant = assistant
        self.history = history

    def run(
        self,
        name: str,
        prompt: str,
        *,
        cancel: threading.Event | None = None,
        manual: bool = False,
        scheduled_for: datetime | None = None,
        write_scope: list[str] | None = None,
    ) -> dict[str, Any]:
        session = job_session(name)
        run_id = self.history.start(name, session, manual=manual, scheduled_for=scheduled_for)
        trigger: dict[str, Any] = {
            "kind": "job",
            "job": name,
            "manual": manual,
            "write_scope": write_scope,
        }
        if scheduled_for is not None:
            trigger["scheduled_for"] = scheduled_for.isoformat(timespec="seconds")
        try:
            outcome = self.assistant.ask(
                prompt, session=session, trigger=trigger, cancel=cancel, unattended=True
            )
        except Exception as exc:
            self.history.finish(run_id, "failed", error=f"{type(exc).__name__}: {exc}")
            raise
        stop = outcome.stop_reason.value
        status = "interrupted" if stop == "cancelled" else ("ok" if outcome.ok else "failed")
        self.history.finish(
            run_id,
            status,
            stop_reason=stop,
            outcome=self.assistant.redactor.text(outcome.answer)[:ANSWER_CHARS],
            error=outcome.stop_detail if status == "failed" else None,
            turn_id=outcome.turn_id,
        )
        if status == "ok":
            try:
                self.assistant.end_session(session, origin=f"job:{name}")
            except Exception:  # the run itself is recorded; extraction is extra
                log.exception("job %s: keeping conclusions of %s failed", name, session)
        return self.history.get(run_id)


def run_scheduled_job(
    name: str,
    *,
    prompt: str,
    runner: JobRunner | None = None,
    cancel: threading.Event | None = None,
    scheduled_for: datetime | None = None,
    write_scope: list[str] | None = None,
) -> dict[str, Any]:
    """What the job store names for every job; `QueueExecutor` supplies the runner."""
    if runner is None:
        raise RuntimeError("scheduled jobs run inside the daemon, whose executor passes a runner")
    return runner.run(
        name, prompt, cancel=cancel, scheduled_for=scheduled_for, write_scope=write_scope
    )


class QueueExecutor(BaseExecutor):
    """An APScheduler executor that puts due runs on the daemon's work queue (D4).

    `submit(lane, work, kind=..., label=...)` is `WorkQueue.submit`; every run of one job
    shares the lane `job:NAME`, so a manual run and a scheduled one never overlap either.
    """

    def __init__(self, submit: Callable[..., Future], runner: JobRunner) -> None:
        super().__init__()
        self._submit = submit
        self._runner = runner

    def _do_submit_job(self, job: Job, run_times: list[datetime]) -> None:
        def work(cancel: threading.Event) -> list[JobExecutionEvent]:
            return self._run(job, run_times, cancel)

        def done(future: Future) -> None:
            error = future.exception()
            if error is None:
                self._run_job_success(job.id, future.result())
            else:
                self._run_job_error(job.id, error, error.__traceback__)

        future = self._submit(f"job:{job.id}", work, kind="job", label=job.id)
        future.add_done_callback(done)

    def _run(
        self, job: Job, run_times: list[datetime], cancel: threading.Event
    ) -> list[JobExecutionEvent]:
        events = []
        alias = job._jobstore_alias
        for run_time in run_times:
            late = datetime.now(UTC) - run_time
            if job.misfire_grace_time is not None and late > timedelta(
                seconds=job.misfire_grace_time
            ):
                log.warning("job %s: the run due at %s was missed by %s", job.id, run_time, late)
                events.append(JobExecutionEvent(EVENT_JOB_MISSED, job.id, alias, run_time))
                continue
            try:
                result = job.func(
                    *job.args,
                    runner=self._runner,
                    cancel=cancel,
                    scheduled_for=run_time,
                    **job.kwargs,
                )
            except Exception as exc:  # recorded in the history and the log
                log.exception("job %s failed", job.id)
                events.append(
                    JobExecutionEvent(EVENT_JOB_ERROR, job.id, alias, run_time, exception=exc)
                )
            else:
                log.info("job %s: %s (%s)", job.id, result["status"], result["stop_reason"])
                events.append(
                    JobExecutionEvent(EVENT_JOB_EXECUTED, job.id, alias, run_time, retval=result)
                )
        return events
