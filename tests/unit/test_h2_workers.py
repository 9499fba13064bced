"""``shell.dataplane.h2_workers.Workers``: the tasks that serve an HTTP/2 connection's streams
one after another: a job never waits for another one in flight, idle workers serve the next
jobs instead of new tasks, and at most ``keep_idle`` of them stay."""

from __future__ import annotations

import trio
import trio.testing

from coxswain.shell.dataplane.h2_workers import Workers


def test_jobs_run_at_once_each_in_a_task_and_idle_workers_take_the_next() -> None:
    async def main() -> None:
        release = trio.Event()
        served: list[int] = []
        tasks: set[trio.lowlevel.Task] = set()

        async def serve(job: int) -> None:
            tasks.add(trio.lowlevel.current_task())
            served.append(job)
            if job < 3:
                await release.wait()  # the first three wait together: none waits for another
            else:
                await trio.lowlevel.checkpoint()

        async with trio.open_nursery() as nursery:
            workers = Workers(nursery, serve, keep_idle=2)
            for job in range(3):
                workers.submit(job)
            await trio.testing.wait_all_tasks_blocked()
            assert sorted(served) == [0, 1, 2]
            assert len(nursery.child_tasks) == 3
            release.set()
            await trio.testing.wait_all_tasks_blocked()
            assert workers.idle == 2  # the third ended
            assert len(nursery.child_tasks) == 2
            for job in range(3, 5):
                workers.submit(job)
            await trio.testing.wait_all_tasks_blocked()
            assert sorted(served) == [0, 1, 2, 3, 4]
            assert len(tasks) == 3  # the last two jobs ran in the idle workers
            assert workers.idle == 2
            nursery.cancel_scope.cancel()

    trio.run(main)


def test_a_job_submitted_while_every_worker_is_busy_gets_a_new_one() -> None:
    async def main() -> None:
        release = trio.Event()
        served: list[int] = []

        async def serve(job: int) -> None:
            served.append(job)
            await release.wait()

        async with trio.open_nursery() as nursery:
            workers = Workers(nursery, serve, keep_idle=4)
            workers.submit(0)
            await trio.testing.wait_all_tasks_blocked()
            workers.submit(1)
            await trio.testing.wait_all_tasks_blocked()
            assert served == [0, 1]
            release.set()
            await trio.testing.wait_all_tasks_blocked()
            assert workers.idle == 2
            nursery.cancel_scope.cancel()

    trio.run(main)
