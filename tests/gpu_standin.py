"""A stand-in CUDA device on a CPU-only machine: counts host syncs and catches stream races.

Inside `StandinGPU()` code written for CUDA runs unchanged: tensors created on or
moved to "cuda" report `device cuda:0` but are CPU tensors inside (so results are
real numbers), `torch.cuda.Stream` / `Event` / `stream()` are recording fakes, and
every aten op is logged with the stream it was launched on (per thread: each thread
starts on the default stream, as on CUDA). Whatever would make the host wait for the
GPU on real CUDA is logged as a sync:

  * reading a device value on the host: `.item()`, `bool(t)`, `.tolist()` (aten
    `_local_scalar_dense`), linalg error checks (`torch.linalg.inv`);
  * ops whose output size depends on device data: `nonzero`, boolean-mask indexing
    (`t[mask]`, `t[mask] = v`), `masked_select`, `unique`, `repeat_interleave` with
    tensor repeats and no `output_size`;
  * indexing a device tensor with a host index tensor, and any other op mixing device
    tensors with (non-scalar) host tensors: the host tensor is copied up, blocking;
  * device -> host copies that are blocking or land in pageable memory, host -> device
    copies that are blocking or come from pageable memory (cudaMemcpyAsync from
    pageable memory waits for the stream), `torch.tensor(..., device="cuda")`;
  * explicit waits: `torch.cuda.synchronize()`, `Stream.synchronize()`,
    `Event.synchronize()`, and `torch.cuda.empty_cache()` (it synchronizes the device).
    `Stream.query()` / `Event.query()` do not wait.

Ordering (a race detector with vector clocks, as ThreadSanitizer does for threads):
every storage remembers the stream (and source line) that last wrote it and the streams
that read it since; every stream and every host thread remembers how far it has seen
each stream (through `wait_event`, `wait_stream`, a host wait, or the host launching
after such a wait). A read of a storage on a stream or by the host that has not seen
its last write, or a write that has not seen the last reads and write, raises
`StreamRace` naming both places. Host -> device order needs no wait (a launch comes
after the host code before it); a thread starts having seen what its starter had seen
(`Thread.start` is a happens-before edge, as in ThreadSanitizer; queues are not modelled).
Host reads are `.numpy()`, `.tolist()`, `.item()` and host ops on plain CPU tensors (e.g.
a pinned buffer a non-blocking copy writes).

What it cannot see: time, and memory the CPU allocator reuses (a freed storage is
forgotten, not recycled late as the CUDA caching allocator would without
`record_stream`). It proves the order of launches, the absence of syncs and that every
cross-stream read is ordered, which is what decides whether streams overlap correctly.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import sys
import threading
import weakref
from dataclasses import dataclass, field
from typing import Iterable, Optional

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten, tree_map

CUDA = torch.device("cuda", 0)
CPU = torch.device("cpu")
aten = torch.ops.aten

# Ops whose output shape depends on values in device memory: CUDA copies a count to the host.
_DATA_DEPENDENT = {aten.nonzero.default, aten.masked_select.default, aten._unique2.default, aten.unique_dim.default,
                   aten.unique_consecutive.default, aten._unique.default}
_REPEAT_INTERLEAVE = {aten.repeat_interleave.Tensor, aten.repeat_interleave.self_Tensor}

_HOST_READS = {aten._local_scalar_dense.default, aten.is_nonzero.default, aten.item.default, aten.equal.default,
               aten.allclose.default}
# linalg ops that check their info code on the host unless called as *_ex
_LINALG_CHECKS = {aten._linalg_check_errors.default, aten.linalg_inv.default, aten.inverse.default,
                  aten.linalg_solve.default, aten.linalg_cholesky.default}
_INDEXING = {aten.index.Tensor, aten.index_put_.default, aten.index_put.default, aten._index_put_impl_.default}
# allocations and metadata: no kernel is launched
_NO_KERNEL = {aten.empty.memory_format, aten.empty_strided.default, aten.empty_like.default, aten.new_empty.default,
              aten.new_empty_strided.default, aten.lift_fresh.default, aten.detach.default, aten.alias.default,
              aten._unsafe_view.default, aten.resize_.default}


class StreamRace(AssertionError):
    """Memory used on a stream (or by the host) before the work that wrote it is known to be done."""


@dataclass
class Entry:
    """One line of the log: kind is "op", "sync", "wait" (a stream waits), "record" (an event),
    "record_stream"; `kernel` is False for ops that launch nothing (views, allocations)."""

    kind: str
    what: str
    stream: str
    kernel: bool = True
    thread: str = field(default_factory=lambda: threading.current_thread().name)


class Agent:
    """A stream or a host thread: its vector clock says how far it has seen each stream."""

    is_host = False

    def __init__(self, name: str) -> None:
        self.name = name
        self.clock: dict[str, int] = {}

    def see(self, clock: dict[str, int]) -> None:
        for name, pos in clock.items():
            if pos > self.clock.get(name, 0):
                self.clock[name] = pos

    def tick(self) -> int:
        self.clock[self.name] = self.clock.get(self.name, 0) + 1
        return self.clock[self.name]

    def has_seen(self, access: "Access") -> bool:
        return access.host or access.agent == self.name or self.clock.get(access.agent, 0) >= access.pos


class _Host(Agent):
    is_host = True


@dataclass
class Access:
    agent: str
    pos: int
    where: str
    host: bool
    op: str = ""

    def __str__(self) -> str:
        return f"{'by the host' if self.host else 'on stream ' + self.agent} ({self.op}) at {self.where}"


@dataclass
class _State:
    write: Optional[Access] = None
    reads: dict[str, Access] = field(default_factory=dict)


_SKIP_FILES = (os.sep + "torch" + os.sep, "gpu_standin.py", "contextlib.py", "threading.py")


def _where() -> str:
    """file:line of the first caller outside torch and this module."""
    frame = sys._getframe(2)
    while frame is not None and any(s in frame.f_code.co_filename for s in _SKIP_FILES):
        frame = frame.f_back
    if frame is None:
        return "?"
    path = frame.f_code.co_filename
    parts = path.split(os.sep)
    return f"{os.sep.join(parts[-2:])}:{frame.f_lineno} ({frame.f_code.co_name})"


class Recorder:
    """The log, the per-thread current streams and host clocks, and the storages' last accesses."""

    def __init__(self, default_stream: "FakeStream") -> None:
        self.log: list[Entry] = []
        self.races: list[str] = []
        self.default_stream = default_stream
        self.all_streams: list[FakeStream] = [default_stream]
        self._tls = threading.local()
        self._lock = threading.RLock()
        self._storages: dict[int, tuple[weakref.ref, _State]] = {}

    # -- per thread

    @property
    def streams(self) -> list:
        """This thread's current-stream stack."""
        if not hasattr(self._tls, "streams"):
            self._tls.streams = [self.default_stream]
        return self._tls.streams

    @property
    def current(self) -> "FakeStream":
        return self.streams[-1]

    @property
    def host(self) -> _Host:
        if not hasattr(self._tls, "host"):
            self._tls.host = _Host(f"host thread {threading.current_thread().name}")
        return self._tls.host

    @property
    def forced(self) -> int:
        return getattr(self._tls, "forced", 0)

    @property
    def quiet(self) -> bool:
        return getattr(self._tls, "quiet", False)

    @contextlib.contextmanager
    def on_device(self):
        """Ops on plain CPU tensors inside count as device ops (they stand for ones on cuda)."""
        self._tls.forced = self.forced + 1
        try:
            yield
        finally:
            self._tls.forced -= 1

    @contextlib.contextmanager
    def untracked(self):
        """The stand-in's own host work: neither logged nor checked."""
        before, self._tls.quiet = self.quiet, True
        try:
            yield
        finally:
            self._tls.quiet = before

    # -- the log

    def add(self, kind: str, what: str, kernel: bool = True) -> None:
        self.log.append(Entry(kind, what, self.current.name, kernel))

    def syncs(self) -> list[Entry]:
        return [e for e in self.log if e.kind == "sync"]

    def ops(self, stream: str | None = None) -> list[int]:
        """Indices in the log of the ops launched (on `stream`, or on any)."""
        return [i for i, e in enumerate(self.log) if e.kind == "op" and (stream is None or e.stream == stream)]

    def launches(self, stream: str | None = None) -> int:
        """Kernels and copies launched (ops less views and allocations)."""
        return sum(e.kind == "op" and e.kernel and (stream is None or e.stream == stream) for e in self.log)

    def clear(self) -> None:
        self.log.clear()

    # -- ordering

    @property
    def capturing(self) -> Optional["FakeGraph"]:
        """The graph this thread is capturing into, if any."""
        return getattr(self._tls, "capturing", None)

    def _refuse_in_capture(self, what: str) -> None:
        if self.capturing is not None:
            raise RuntimeError(f"CUDA error: operation not permitted when stream is capturing ({what} inside a "
                               f"CUDA graph capture)")

    def sync(self, what: str, clock: Optional[dict[str, int]] = None) -> None:
        """The host waits: for `clock` (an event's or a stream's), or for the current stream."""
        self._refuse_in_capture(what)
        self.add("sync", what)
        with self._lock:
            self.host.see(self.current.clock if clock is None else clock)

    def sync_all(self, what: str) -> None:
        self._refuse_in_capture(what)
        self.add("sync", what)
        with self._lock:
            for stream in self.all_streams:
                self.host.see(stream.clock)

    def launch(self, stream: "FakeStream") -> None:
        """The host queues work on `stream`: it comes after everything the host has seen."""
        stream.see(self.host.clock)

    def access(self, what: str, reads: Iterable[torch.Tensor] = (), writes: Iterable[torch.Tensor] = (),
               fresh: Iterable[torch.Tensor] = (), device: bool = True) -> None:
        """Check and record: `reads` and `writes` of existing storages and `fresh` (new) ones,
        by the current stream (`device`) or by this host thread."""
        with self._lock:
            if device:
                agent = self.current
                self.launch(agent)
            else:
                agent = self.host
            access = Access(agent.name, agent.tick(), _where(), agent.is_host, what)
            for t in reads:
                state = self._state(t)
                if state is None:
                    continue
                if state.write is not None and not agent.has_seen(state.write):
                    self._race(f"a read {access} of memory written {state.write}, with no wait in between")
                state.reads[agent.name] = access
            for t in writes:
                state = self._state(t)
                if state is None:
                    continue
                for earlier in [state.write, *state.reads.values()]:
                    if earlier is not None and not agent.has_seen(earlier):
                        self._race(f"a write {access} to memory used {earlier}, with no wait in between")
                state.write, state.reads = access, {}
            for t in fresh:
                state = self._state(t, new=True)
                if state is not None:
                    state.write, state.reads = access, {}

    def _state(self, t: torch.Tensor, new: bool = False) -> Optional[_State]:
        t = t.elem if isinstance(t, StandinTensor) else t
        try:
            storage = t.untyped_storage()
        except (RuntimeError, NotImplementedError):
            return None
        key = id(storage)
        entry = self._storages.get(key)
        if entry is not None and entry[0]() is storage and not new:
            return entry[1]
        storages = self._storages
        state = _State()
        self._storages[key] = (weakref.ref(storage, lambda _, key=key: storages.pop(key, None)), state)
        return state

    def _race(self, message: str) -> None:
        self.races.append(message)
        raise StreamRace(message)


def _unwrap_all(tree):
    return tree_map(lambda x: x.elem if isinstance(x, StandinTensor) else x, tree)


def _wrap_all(tree):
    return tree_map(lambda x: StandinTensor(x) if isinstance(x, torch.Tensor) and not isinstance(x, StandinTensor) else x, tree)


def _host_tensors(tree) -> list[torch.Tensor]:
    return [x for x in tree_flatten(tree)[0] if isinstance(x, torch.Tensor) and not isinstance(x, StandinTensor)]


class StandinTensor(torch.Tensor):
    """A CPU tensor that says it lives on cuda:0."""

    elem: torch.Tensor

    @staticmethod
    def __new__(cls, elem: torch.Tensor):
        return torch.Tensor._make_wrapper_subclass(
            cls, elem.shape, strides=elem.stride(), storage_offset=elem.storage_offset(), dtype=elem.dtype,
            device=CUDA, requires_grad=False)

    def __init__(self, elem: torch.Tensor) -> None:
        self.elem = elem

    def __repr__(self) -> str:
        return f"StandinTensor({self.elem!r})"

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in _GUARDED:
            rec = _recorder()
            if func in _INDEX_METHODS and _host_tensors(args[1]):
                rec.add("op", "host index tensor -> device copy")
                rec.sync("indexing a device tensor with a host index tensor (copied up, blocking)")
            # These Python bindings set a CUDA device guard before dispatching, which a
            # CPU-only build refuses: run them on the CPU tensors inside, as device ops.
            with rec.on_device():
                out = func(*_unwrap_all(args), **_unwrap_all(kwargs))
            return args[0] if func in _IN_PLACE else _wrap_all(out)
        with torch._C.DisableTorchFunctionSubclass():
            return func(*args, **kwargs)

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        raise RuntimeError(f"{func} ran outside StandinGPU()")  # the mode handles every op inside it


_IN_PLACE = {torch.Tensor.__setitem__, torch.Tensor.copy_}
_INDEX_METHODS = {torch.Tensor.__getitem__, torch.Tensor.__setitem__}
_GUARDED = _IN_PLACE | {torch.Tensor.__getitem__, torch.Tensor.__invert__, torch.Tensor.contiguous,
                        torch.Tensor.new_tensor, torch.Tensor.new_zeros, torch.Tensor.new_ones, torch.Tensor.new_empty,
                        torch.Tensor.new_full, torch.nonzero, torch.Tensor.nonzero}


def _mark_pinned(t: torch.Tensor) -> None:
    t._standin_pinned = True  # host memory the stand-in DMA engine may read asynchronously


def _is_pinned(t: torch.Tensor) -> bool:
    return getattr(t, "_standin_pinned", False)


def _is_cuda(device) -> bool:
    return device is not None and torch.device(device).type == "cuda"


_stream_ids = itertools.count()


class FakeStream(Agent):
    def __init__(self, device=None, priority: int = 0, *, name: str | None = None) -> None:
        super().__init__(name or f"stream{next(_stream_ids)}")
        self.device = CUDA
        self.priority = priority  # lower is sooner, as on CUDA (recorded, not simulated)
        if _active:
            _recorder().all_streams.append(self)

    def wait_stream(self, other: "FakeStream") -> None:
        rec = _recorder()
        rec.log.append(Entry("wait", f"{self.name} waits for stream {other.name}", self.name))
        with rec._lock:
            rec.launch(self)
            self.see(other.clock)

    def wait_event(self, event: "FakeEvent") -> None:
        rec = _recorder()
        rec.log.append(Entry("wait", f"{self.name} waits for event {event.name}@{event.stream}", self.name))
        with rec._lock:
            rec.launch(self)
            self.see(event.clock)

    def record_event(self, event: "FakeEvent | None" = None) -> "FakeEvent":
        event = event or FakeEvent()
        event.record(self)
        return event

    def synchronize(self) -> None:
        _recorder().sync(f"stream {self.name}.synchronize()", self.clock)

    def query(self) -> bool:
        """Asks without waiting; True (the stand-in's work is always done), so the host has seen it."""
        rec = _recorder()
        with rec._lock:
            rec.host.see(self.clock)
        return True

    def __repr__(self) -> str:
        return f"FakeStream({self.name})"


_event_ids = itertools.count()


class FakeEvent:
    def __init__(self, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False) -> None:
        self.name = f"event{next(_event_ids)}"
        self.blocking = blocking  # the waiting host thread sleeps instead of spinning
        self.stream: Optional[str] = None
        self.clock: dict[str, int] = {}

    def record(self, stream: FakeStream | None = None) -> None:
        rec = _recorder()
        stream = stream or rec.current
        self.stream = stream.name
        rec.log.append(Entry("record", f"{self.name} on {stream.name}", stream.name))
        with rec._lock:
            rec.launch(stream)
            self.clock = dict(stream.clock)

    def wait(self, stream: FakeStream | None = None) -> None:
        (stream or _recorder().current).wait_event(self)

    def synchronize(self) -> None:
        how = "blocking: the host sleeps" if self.blocking else "spin-wait: the host burns a core"
        _recorder().sync(f"event {self.name}.synchronize() ({how})", self.clock)

    def query(self) -> bool:
        """Asks without waiting (not a sync); True, so the host has seen the event."""
        rec = _recorder()
        with rec._lock:
            rec.host.see(self.clock)
        return True

    def elapsed_time(self, other: "FakeEvent") -> float:
        return 0.0


class FakeGraph:
    """torch.cuda.CUDAGraph: ops launched while capturing are recorded, not run (their outputs
    are filled with NaN / -1 after the capture, as unrun GPU memory would hold garbage);
    `replay()` runs them again, in order, writing into the same tensors, as one launch."""

    def __init__(self, keep_graph: bool = False) -> None:
        self.ops: list = []  # (func, args, kwargs, positions of fresh outputs, those outputs)
        self.reads: list[torch.Tensor] = []  # memory from outside the graph that it reads
        self.writes: list[torch.Tensor] = []  # memory it writes
        self._made: set[int] = set()
        self._pool = None
        self.captured = False

    def capture_begin(self, pool=None, capture_error_mode: str = "global") -> None:
        rec = _recorder()
        if rec.capturing is not None:
            raise RuntimeError("a CUDA graph capture is already under way on this thread")
        if rec.current is rec.default_stream:
            raise RuntimeError("CUDA graphs must be captured on a non-default stream")
        self._pool = pool
        rec._tls.capturing = self

    def capture_end(self) -> None:
        rec = _recorder()
        rec._tls.capturing = None
        self.captured = True
        with rec.untracked():
            for t in self.writes:
                if t.is_floating_point():
                    t.fill_(float("nan"))
                elif t.dtype != torch.bool:
                    t.fill_(-1)

    def add(self, func, args, kwargs, out, reads, writes, made) -> None:
        flat = tree_flatten(out)[0]
        ids = {id(t) for t in made}
        positions = [i for i, t in enumerate(flat) if isinstance(t, torch.Tensor) and id(t) in ids]
        self.ops.append((func, args, kwargs, positions, [flat[i] for i in positions]))
        for t in reads:
            if id(t.untyped_storage()) not in self._made:
                self.reads.append(t)
        for t in [*writes, *made]:
            self._made.add(id(t.untyped_storage()))
            self.writes.append(t)

    def replay(self) -> None:
        rec = _recorder()
        if not self.captured:
            raise RuntimeError("replay() of a CUDA graph that was never captured")
        rec.add("op", f"graph replay ({sum(f not in _NO_KERNEL for f, *_ in self.ops)} kernels)")
        rec.access("graph replay", reads=self.reads, writes=self.writes)
        with rec.untracked(), torch.inference_mode():
            for func, args, kwargs, positions, outs in self.ops:
                if func in _NO_KERNEL:
                    continue  # allocations are the graph's own (views were never recorded)
                flat = tree_flatten(func(*args, **kwargs))[0]
                for i, old in zip(positions, outs):
                    old.copy_(flat[i])

    def pool(self):
        return self._pool

    def reset(self) -> None:
        self.ops.clear()
        self.captured = False


@contextlib.contextmanager
def _graph(cuda_graph: FakeGraph, pool=None, stream: Optional["FakeStream"] = None, capture_error_mode: str = "global"):
    """torch.cuda.graph: synchronize (as PyTorch does before a capture), capture on `stream`."""
    rec = _recorder()
    rec.sync_all("torch.cuda.graph(): synchronize before capturing")
    stream = stream or FakeStream()
    streams = rec.streams
    stream.wait_stream(rec.current)
    streams.append(stream)
    try:
        cuda_graph.capture_begin(pool, capture_error_mode=capture_error_mode)
        try:
            yield
        finally:
            cuda_graph.capture_end()
    finally:
        streams.pop()


_active: list[Recorder] = []


def _recorder() -> Recorder:
    return _active[-1]


def _tensor_args(func, args, kwargs) -> tuple[list, list]:
    """(read, written) tensors among an op's arguments, by its schema's alias annotations."""
    reads, writes = [], []
    for i, arg in enumerate(func._schema.arguments):
        value = args[i] if i < len(args) else kwargs.get(arg.name)
        tensors = [x for x in tree_flatten(value)[0] if isinstance(x, torch.Tensor)]
        (writes if arg.alias_info is not None and arg.alias_info.is_write else reads).extend(tensors)
    return reads, writes


class _Mode(TorchDispatchMode):
    """Runs every op on the CPU tensors inside, logs and checks it, and keeps 'cuda' results disguised."""

    def __init__(self, rec: Recorder) -> None:
        super().__init__()
        self.rec = rec

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = dict(kwargs or {})
        on_device = False

        def unwrap(x):
            nonlocal on_device
            if isinstance(x, StandinTensor):
                on_device = True
                return x.elem
            return x

        cpu_args, cpu_kwargs = tree_map(unwrap, args), tree_map(unwrap, kwargs)
        to_device = _is_cuda(cpu_kwargs.get("device"))
        if to_device:
            cpu_kwargs["device"] = CPU
        pin = bool(cpu_kwargs.pop("pin_memory", False))
        if self.rec.quiet:
            return func(*cpu_args, **cpu_kwargs)
        # forced: ops on the CPU tensors inside a StandinTensor method stand for device ops
        device = on_device or to_device or self.rec.forced > 0
        capture = self.rec.capturing if device else None
        out = func(*cpu_args, **cpu_kwargs)
        if not device and any(isinstance(t, torch.Tensor) and t.is_mkldnn for t in tree_flatten((cpu_args, out))[0]):
            return out  # oneDNN's packed weights of a CPU model beside the stand-in: host work with no storage to order
        reads, writes = _tensor_args(func, cpu_args, cpu_kwargs)
        given = {id(t.untyped_storage()) for t in reads + writes}
        made = [t for t in tree_flatten(out)[0] if isinstance(t, torch.Tensor) and id(t.untyped_storage()) not in given]
        view = func.is_view and not made  # (aten.to and friends are "views" that may copy)
        if device:
            self.rec.add("capture" if capture else "op", str(func), kernel=not (view or func in _NO_KERNEL))
        if not view:
            if capture is not None:  # not run now on a GPU: the graph runs it at each replay
                capture.add(func, cpu_args, cpu_kwargs, out, reads, writes, made)
            else:
                self.rec.access(str(func), reads, writes, made, device=device)
        self._sync_after(func, args, kwargs, cpu_args, cpu_kwargs, device, to_device)
        if pin and isinstance(out, torch.Tensor):
            _mark_pinned(out)
        if func is aten._to_copy.default and "device" in kwargs and not _is_cuda(kwargs["device"]):
            return out  # explicitly to the host: a plain CPU tensor
        if func is aten.copy_.default and not isinstance(args[0], StandinTensor):
            return args[0]  # a copy into a host tensor
        if not (on_device or to_device):
            return out  # host work, or device work on the CPU tensors inside (forced): the caller wraps
        by_id = {id(x.elem): x for x in tree_flatten((args, kwargs))[0] if isinstance(x, StandinTensor)}

        def wrap(t):
            if isinstance(t, torch.Tensor) and not isinstance(t, StandinTensor):
                same = by_id.get(id(t))  # in-place ops return their own argument
                return same if same is not None else StandinTensor(t)
            return t

        return tree_map(wrap, out)

    def _sync_after(self, func, args, kwargs, cpu_args, cpu_kwargs, device, to_device) -> None:
        """Log (and order the host after) what makes the host wait for the current stream."""
        if not device:
            return  # pure host work
        name = func.__name__ if hasattr(func, "__name__") else str(func)
        sync = self.rec.sync
        if func in _HOST_READS:
            sync(f"a device value read on the host ({name}: .item(), bool(), .tolist(), torch.equal)")
        elif func in _LINALG_CHECKS:
            sync("linalg error check (torch.linalg.inv / cholesky / solve)")
        elif func in _DATA_DEPENDENT:
            sync(f"data-dependent output size ({name})")
        elif func in _REPEAT_INTERLEAVE:
            if cpu_kwargs.get("output_size") is None:
                sync("repeat_interleave with tensor repeats and no output_size (the size is read on the host)")
        elif func in _INDEXING:
            indices = cpu_args[1]
            if any(i is not None and i.dtype == torch.bool for i in indices):
                sync(f"boolean-mask indexing ({name})")
            elif self.rec.forced == 0 and _host_tensors(args[1]):
                sync(f"indexing a device tensor with a host index tensor ({name}: copied up, blocking)")
        elif func is aten._to_copy.default:
            src = args[0]
            # .to("cpu", non_blocking=True) allocates its destination pinned: no wait
            if isinstance(src, StandinTensor) and cpu_kwargs.get("device") is not None and not to_device \
                    and not cpu_kwargs.get("non_blocking", False):
                sync("blocking device -> host copy (.cpu() / .to('cpu'))")
        elif func is aten.copy_.default:
            dst, src = args[0], args[1]
            non_blocking = bool(cpu_args[2]) if len(cpu_args) > 2 else bool(cpu_kwargs.get("non_blocking", False))
            if isinstance(src, StandinTensor) and not isinstance(dst, StandinTensor):
                if not non_blocking or not _is_pinned(dst):
                    sync("device -> host copy_ that is blocking or into pageable memory")
            elif isinstance(dst, StandinTensor) and not isinstance(src, StandinTensor):
                if not non_blocking or not _is_pinned(src):
                    sync("host -> device copy_ that is blocking or from pageable memory")
        elif self.rec.forced == 0 and any(t.dim() > 0 for t in _host_tensors((args, kwargs))):
            # CUDA takes 0-dim host tensors as scalars; anything bigger is copied up first
            sync(f"an op mixing device and host tensors ({name}: the host tensor is copied up, blocking)")


class StandinGPU:
    """Context manager; `.rec` holds the log. Use a fresh one per measurement or `rec.clear()`.
    Threads started inside run under it too, each on the default stream to begin with."""

    def __init__(self) -> None:
        self.default_stream = FakeStream(name="default")
        self.rec = Recorder(self.default_stream)
        self._stack = contextlib.ExitStack()

    # -- the torch entry points that never reach the dispatcher on a CPU-only build

    def _tensor_to(self, orig):
        rec = self.rec

        def to(t, *args, **kwargs):
            copy = kwargs.pop("copy", False)
            device, dtype, non_blocking, memory_format = torch._C._nn._parse_to(*args, **kwargs)
            dtype, memory_format = dtype or t.dtype, memory_format or torch.preserve_format
            if (device is not None and _is_cuda(device) != isinstance(t, StandinTensor)) and rec.capturing is not None:
                raise RuntimeError("a host <-> device copy inside a CUDA graph capture (the stand-in does not replay those)")
            if isinstance(t, StandinTensor):
                if device is not None and not _is_cuda(device):
                    with rec.untracked():
                        out = orig(t.elem, dtype, copy=True, memory_format=memory_format)
                    rec.add("op", "device -> host copy")
                    rec.access("device -> host copy", reads=[t], fresh=[out])
                    if not non_blocking:  # non_blocking=True allocates the host tensor pinned
                        rec.sync("blocking device -> host copy (.cpu() / .to('cpu'))")
                    else:
                        _mark_pinned(out)
                    return out
                with rec.on_device():
                    out = orig(t.elem, dtype, copy=copy, memory_format=memory_format)
                return t if out is t.elem else StandinTensor(out)
            if _is_cuda(device):
                with rec.untracked():
                    out = orig(t, dtype, copy=True, memory_format=memory_format)
                rec.add("op", "host -> device copy")
                rec.access("host -> device copy", reads=[t], fresh=[out])
                if not non_blocking or not _is_pinned(t):
                    rec.sync("host -> device copy that is blocking or from pageable memory")
                return StandinTensor(out)
            if copy:
                kwargs["copy"] = True
            return orig(t, *args, **kwargs)

        return to

    def _factory(self, orig):
        rec = self.rec

        def make(data, *args, device=None, **kwargs):
            if _is_cuda(device):
                with rec.untracked():
                    out = orig(data, *args, **kwargs).clone()
                rec.add("op", f"{orig.__name__}(..., device=cuda)")
                rec.access(f"torch.{orig.__name__}", fresh=[out])
                rec.sync(f"torch.{orig.__name__}(..., device=cuda): a blocking host -> device copy")
                return StandinTensor(out)
            return orig(data, *args, device=device, **kwargs)

        return make

    def _host_read(self, orig, what: str):
        rec = self.rec

        def read(t, *args, **kwargs):
            if isinstance(t, StandinTensor):
                if orig is _NUMPY:
                    raise TypeError("can't convert cuda:0 device type tensor to numpy. Use Tensor.cpu() to copy the "
                                    "tensor to host memory first.")
                rec.add("op", what)
                rec.access(what, reads=[t])
                rec.sync(f"a device value read on the host ({what})")
                return orig(t.elem, *args, **kwargs)
            # the numpy view may be read and written: both must come after the device's use
            rec.access(what, reads=[t], writes=[t] if orig is _NUMPY else [], device=False)
            return orig(t, *args, **kwargs)

        return read

    def _run_under_mode(self, orig_run):
        rec = self.rec

        def run(thread):
            with _Mode(rec):
                rec.host.see(getattr(thread, "_standin_start_clock", {}))  # what its starter had seen
                orig_run(thread)

        return run

    def _start_after_host(self, orig_start):
        """Thread.start: everything the starting thread has seen happens before the new thread
        runs (a happens-before edge, as in ThreadSanitizer); e.g. a warm-up's host wait on the
        main thread covers the pipeline threads it starts afterwards."""
        rec = self.rec

        def start(thread):
            thread._standin_start_clock = dict(rec.host.clock)
            orig_start(thread)

        return start

    def __enter__(self) -> "StandinGPU":
        rec, patch = self.rec, self._patch
        _active.append(rec)
        self._stack.callback(_active.pop)
        patch(torch.cuda, "_lazy_init", lambda: None)
        patch(torch.cuda, "is_available", lambda: True)
        patch(torch.cuda, "device_count", lambda: 1)
        patch(torch.cuda, "current_device", lambda: 0)
        patch(torch.cuda, "get_device_name", lambda device=None: "stand-in GPU (CPU)")
        patch(torch.cuda, "is_bf16_supported", lambda including_emulation=True: True)
        patch(torch.cuda, "Stream", FakeStream)
        patch(torch.cuda, "Event", FakeEvent)
        patch(torch.cuda, "current_stream", lambda device=None: rec.current)
        patch(torch.cuda, "default_stream", lambda device=None: self.default_stream)
        patch(torch.cuda, "stream", self._use_stream)
        patch(torch.cuda, "CUDAGraph", FakeGraph)
        patch(torch.cuda, "graph", _graph)
        patch(torch.cuda, "graph_pool_handle", lambda: object())
        patch(torch.cuda, "is_current_stream_capturing", lambda: rec.capturing is not None)
        patch(torch.cuda, "synchronize", lambda device=None: rec.sync_all("torch.cuda.synchronize()"))
        patch(torch.cuda, "empty_cache", lambda: rec.sync_all("torch.cuda.empty_cache() (synchronizes the device)"))
        patch(torch.Tensor, "to", self._tensor_to(torch.Tensor.to))
        patch(torch.Tensor, "cuda", lambda t, device=None, non_blocking=False: t.to("cuda", non_blocking=non_blocking))
        patch(torch.Tensor, "cpu", lambda t, memory_format=torch.preserve_format: t.to("cpu", memory_format=memory_format))
        patch(torch.Tensor, "numpy", self._host_read(_NUMPY, ".numpy()"))
        patch(torch.Tensor, "tolist", self._host_read(torch.Tensor.tolist, ".tolist()"))
        patch(torch.Tensor, "pin_memory", lambda t, device=None: self._pin(t))
        patch(torch.Tensor, "is_pinned", lambda t, device=None: _is_pinned(t))
        patch(torch.Tensor, "record_stream",
              lambda t, s: rec.log.append(Entry("record_stream", f"tensor used on {s.name}", rec.current.name)))
        # Module.to("cuda") must store the StandinTensor itself, not `param.data = ...` it
        compatible = torch._has_compatible_shallow_copy_type
        patch(torch, "_has_compatible_shallow_copy_type",
              lambda input, from_: not isinstance(from_, StandinTensor) and compatible(input, from_))
        patch(torch, "tensor", self._factory(torch.tensor))
        patch(torch, "as_tensor", self._factory(torch.as_tensor))
        patch(threading.Thread, "run", self._run_under_mode(threading.Thread.run))
        patch(threading.Thread, "start", self._start_after_host(threading.Thread.start))
        self._stack.enter_context(_Mode(rec))
        return self

    def __exit__(self, *exc) -> None:
        self._stack.close()

    def _patch(self, owner, name: str, value) -> None:
        old = getattr(owner, name)
        setattr(owner, name, value)
        self._stack.callback(setattr, owner, name, old)

    def _pin(self, t: torch.Tensor) -> torch.Tensor:
        out = t.clone()
        _mark_pinned(out)
        return out

    @contextlib.contextmanager
    def _use_stream(self, stream: FakeStream | None):
        if stream is None:
            yield
            return
        streams = self.rec.streams  # this thread's
        streams.append(stream)
        try:
            yield
        finally:
            streams.pop()


_NUMPY = torch.Tensor.numpy


def to_standin(module: torch.nn.Module) -> torch.nn.Module:
    """Move a module's parameters and buffers onto the stand-in device (call inside StandinGPU)."""
    return module.to("cuda")
