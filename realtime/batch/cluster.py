"""The Ray batch engine (`--ray`): one actor per GPU of the cluster, each holding the models.

Ray's actor-pool pattern: a fixed set of model-holding actors, a unit submitted to
whichever is idle, results taken with `ray.wait` as they finish. (`ray.util.ActorPool`
does the same but cannot say which unit a failed call was for, which a retry needs.)
An actor whose process dies is replaced by a new one (which loads the models again),
and the unit it held is resubmitted, up to `--retries` times. (Ray's own `max_restarts`
fails the calls made while the actor restarts, so replacing it here is simpler.)
"""

from __future__ import annotations

import logging
import socket
from typing import Optional
from urllib.parse import urlsplit

from realtime.batch.worker import Unit, UnitRunner, unit_record
from realtime.errors import UserError

log = logging.getLogger(__name__)


def import_ray():
    try:
        import ray
    except ImportError:
        raise UserError("--ray needs Ray, which is not installed; install it with `pip install sapiens-realtime[cluster]` "
                        "(or `pip install -e .[cluster]` in a checkout), or leave out --ray to use this machine's "
                        "GPUs.") from None
    return ray


HEAD_HINT = "start a head node there with `ray start --head --port=6379` and pass --ray HOST:6379"


def check_reachable(address: str, timeout: float) -> None:
    """A fast probe of the cluster's port (the GCS, or the Ray client server of ray://) before
    `ray.init`, which would retry an unreachable address for minutes: one sentence instead."""
    if not (timeout > 0):
        raise UserError(f"--ray-timeout must be a positive number of seconds, not {timeout}.")
    if address in ("", "auto", "local"):
        return  # Ray finds (or starts) the local cluster itself, and says so quickly when there is none
    parts = urlsplit(address if "://" in address else f"ray://{address}")
    try:
        host, port = parts.hostname, parts.port
    except ValueError:
        host, port = None, None
    if not host or port is None:
        raise UserError(f"--ray {address} names no HOST:PORT; {HEAD_HINT}, or use `--ray auto` on a cluster machine.")
    try:
        socket.create_connection((host, port), timeout=timeout).close()
    except OSError as err:
        reason = "timed out" if isinstance(err, socket.timeout) else (err.strerror or str(err))
        raise UserError(f"Cannot reach the Ray cluster at {address} within {timeout:g} s ({reason}); {HEAD_HINT}, "
                        f"or leave out --ray to use this machine.") from None


class UnitActor:
    """A Ray actor around one `UnitRunner` (models loaded once, in `__init__`)."""

    def __init__(self, run_options, output_dir: str, exports: tuple[str, ...], device: str, name: str,
                 threads: Optional[int]):
        import torch

        if threads:
            torch.set_num_threads(threads)
        self.name = name
        self.runner, self.error = None, None
        try:
            self.runner = UnitRunner(run_options, output_dir, exports, device, name)
        except UserError as err:  # reported by `ready()` as one sentence, not as a dead actor
            self.error = str(err)

    def ready(self) -> Optional[str]:
        return self.error

    def process(self, unit: Unit, progress) -> dict:
        if self.runner is None:
            return unit_record(unit, "failed", error=self.error, worker=self.name)

        def report(frames: int) -> None:
            progress.put_nowait((unit.name, frames))

        return self.runner.process(unit, report)


class RayEngine:
    def __init__(self, options, units: int):
        ray = self.ray = import_ray()
        self.started_ray = not ray.is_initialized()
        if self.started_ray:
            check_reachable(options.ray or "", options.ray_timeout)
            try:
                ray.init(address=options.ray or None, include_dashboard=False, logging_level=logging.WARNING)
            except Exception as err:  # ConnectionError, RuntimeError, ValueError for a bad address
                where = f"at {options.ray}" if options.ray else "here"
                raise UserError(f"Could not start or reach Ray {where} ({str(err).strip().splitlines()[0]}); "
                                f"{HEAD_HINT} (or `--ray auto` on one of its machines), or leave out --ray.") from None
        resources = ray.cluster_resources()
        gpus = int(resources.get("GPU", 0))
        if gpus and options.run.models.device != "cpu":
            count, device, per_actor, threads = options.workers or gpus, "cuda", {"num_gpus": 1}, None
        else:
            count = options.workers or 1
            threads = max(1, int(resources.get("CPU", 1)) // count)
            device, per_actor = "cpu", {"num_cpus": threads}
        actor_class = ray.remote(UnitActor).options(max_restarts=0, **per_actor)

        def new_actor(name: str):
            return actor_class.remote(options.run, options.output_dir, options.exports, device, name, threads)

        self.new_actor = new_actor
        self.names = {new_actor(f"ray-{device}#{i}"): f"ray-{device}#{i}" for i in range(min(count, units))}
        self.actors = list(self.names)

    def run(self, book) -> None:
        ray = self.ray
        from ray.exceptions import RayActorError
        from ray.util.queue import Empty, Queue

        try:
            errors = [e for e in ray.get([a.ready.remote() for a in self.actors]) if e]
            if errors:
                raise UserError(errors[0])
            progress = Queue(actor_options={"num_cpus": 0})
            running: dict = {}  # ObjectRef -> (actor, unit)
            idle = list(self.actors)
            while book.has_pending() or running:
                while idle and book.has_pending():
                    actor, unit = idle.pop(), book.next_unit()
                    running[actor.process.remote(unit, progress)] = (actor, unit)
                finished, _ = ray.wait(list(running), num_returns=1, timeout=0.2)
                while True:
                    try:
                        book.progress(*progress.get_nowait())
                    except Empty:
                        break
                for ref in finished:
                    actor, unit = running.pop(ref)
                    try:
                        book.finished(unit, ray.get(ref))
                    except RayActorError as err:  # the actor's process died: a new actor takes its place
                        name = self.names[actor]
                        book.worker_died(unit, f"the Ray worker {name} died ({type(err).__name__}) while processing {unit.video}")
                        ray.kill(actor)
                        actor = self.new_actor(name)  # calls made before it is up wait for it
                        self.names[actor] = name
                        self.actors.append(actor)
                    idle.append(actor)
        finally:
            for actor in self.actors:
                ray.kill(actor)
            if self.started_ray:
                ray.shutdown()
