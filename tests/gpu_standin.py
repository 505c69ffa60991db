"""A stand-in CUDA device on a CPU-only machine, for counting host syncs.

Inside `StandinGPU()` code written for CUDA runs unchanged: tensors created on or
moved to "cuda" report `device cuda:0` but are CPU tensors inside (so results are
real numbers), `torch.cuda.Stream` / `Event` / `stream()` are recording fakes, and
every aten op is logged with the stream it was launched on. Whatever would make the
host wait for the GPU on real CUDA is logged as a sync:

  * reading a device value on the host: `.item()`, `bool(t)`, `.tolist()` (aten
    `_local_scalar_dense`), linalg error checks (`torch.linalg.inv`);
  * ops whose output size depends on device data: `nonzero`, boolean-mask indexing
    (`t[mask]`, `t[mask] = v`), `masked_select`, `unique`;
  * device -> host copies that are blocking or land in pageable memory, host -> device
    copies that are blocking or come from pageable memory (cudaMemcpyAsync from
    pageable memory waits for the stream), `torch.tensor(..., device="cuda")`;
  * explicit waits: `torch.cuda.synchronize()`, `Stream.synchronize()`, `Event.synchronize()`.

What it cannot see: time. It proves the order of launches and the absence of syncs,
which is what decides whether streams overlap on a real GPU.
"""

from __future__ import annotations

import contextlib
import itertools
from dataclasses import dataclass, field

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_map

CUDA = torch.device("cuda", 0)
CPU = torch.device("cpu")
aten = torch.ops.aten

# Ops whose output shape depends on values in device memory: CUDA copies a count to the host.
_DATA_DEPENDENT = {aten.nonzero.default, aten.masked_select.default, aten._unique2.default, aten.unique_dim.default,
                   aten.unique_consecutive.default, aten._unique.default}

_HOST_READS = {aten._local_scalar_dense.default, aten.is_nonzero.default, aten.item.default, aten.equal.default,
               aten.allclose.default}
# linalg ops that check their info code on the host unless called as *_ex
_LINALG_CHECKS = {aten._linalg_check_errors.default, aten.linalg_inv.default, aten.inverse.default,
                  aten.linalg_solve.default, aten.linalg_cholesky.default}


@dataclass
class Entry:
    """One line of the log: kind is "op", "sync", "wait" (a stream waits), "record" (an event)."""

    kind: str
    what: str
    stream: str


@dataclass
class Recorder:
    log: list[Entry] = field(default_factory=list)
    streams: list = field(default_factory=list)  # the current-stream stack
    forced: int = 0  # > 0 inside StandinTensor indexing

    @property
    def current(self) -> "FakeStream":
        return self.streams[-1]

    def add(self, kind: str, what: str) -> None:
        self.log.append(Entry(kind, what, self.current.name))

    def syncs(self) -> list[Entry]:
        return [e for e in self.log if e.kind == "sync"]

    def ops(self, stream: str | None = None) -> list[int]:
        """Indices in the log of the ops launched (on `stream`, or on any)."""
        return [i for i, e in enumerate(self.log) if e.kind == "op" and (stream is None or e.stream == stream)]

    def clear(self) -> None:
        self.log.clear()

    @contextlib.contextmanager
    def on_device(self):
        """Ops on plain CPU tensors inside count as device ops (they stand for ones on cuda)."""
        self.forced += 1
        try:
            yield
        finally:
            self.forced -= 1


def _unwrap_all(tree):
    return tree_map(lambda x: x.elem if isinstance(x, StandinTensor) else x, tree)


def _wrap_all(tree):
    return tree_map(lambda x: StandinTensor(x) if isinstance(x, torch.Tensor) and not isinstance(x, StandinTensor) else x, tree)


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
            # These Python bindings set a CUDA device guard before dispatching, which a
            # CPU-only build refuses: run them on the CPU tensors inside, as device ops.
            with _recorder().on_device():
                out = func(*_unwrap_all(args), **_unwrap_all(kwargs))
            return args[0] if func in _IN_PLACE else _wrap_all(out)
        if func is torch.Tensor.tolist:
            _recorder().add("op", "tolist")
            _recorder().add("sync", "a device value read on the host (.tolist())")
            return args[0].elem.tolist()
        if func is torch.Tensor.numpy:
            raise TypeError("can't convert cuda:0 device type tensor to numpy. Use Tensor.cpu() to copy the tensor to host memory first.")
        with torch._C.DisableTorchFunctionSubclass():
            return func(*args, **kwargs)

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        raise RuntimeError(f"{func} ran outside StandinGPU()")  # the mode handles every op inside it


_IN_PLACE = {torch.Tensor.__setitem__, torch.Tensor.copy_}
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


class FakeStream:
    def __init__(self, device=None, priority: int = 0, *, name: str | None = None) -> None:
        self.name = name or f"stream{next(_stream_ids)}"
        self.device = CUDA

    def wait_stream(self, other: "FakeStream") -> None:
        _recorder().log.append(Entry("wait", f"{self.name} waits for stream {other.name}", self.name))

    def wait_event(self, event: "FakeEvent") -> None:
        _recorder().log.append(Entry("wait", f"{self.name} waits for event {event.name}@{event.stream}", self.name))

    def record_event(self, event: "FakeEvent | None" = None) -> "FakeEvent":
        event = event or FakeEvent()
        event.record(self)
        return event

    def synchronize(self) -> None:
        _recorder().add("sync", f"stream {self.name}.synchronize()")

    def query(self) -> bool:
        _recorder().add("sync", f"stream {self.name}.query()")
        return True

    def __repr__(self) -> str:
        return f"FakeStream({self.name})"


_event_ids = itertools.count()


class FakeEvent:
    def __init__(self, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False) -> None:
        self.name = f"event{next(_event_ids)}"
        self.stream = None

    def record(self, stream: FakeStream | None = None) -> None:
        stream = stream or _recorder().current
        self.stream = stream.name
        _recorder().log.append(Entry("record", f"{self.name} on {stream.name}", stream.name))

    def wait(self, stream: FakeStream | None = None) -> None:
        (stream or _recorder().current).wait_event(self)

    def synchronize(self) -> None:
        _recorder().add("sync", f"event {self.name}.synchronize()")

    def query(self) -> bool:
        return True  # asking does not block

    def elapsed_time(self, other: "FakeEvent") -> float:
        return 0.0


_active: list[Recorder] = []


def _recorder() -> Recorder:
    return _active[-1]


class _Mode(TorchDispatchMode):
    """Runs every op on the CPU tensors inside, logs it, and keeps 'cuda' results disguised."""

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
        if "device" in cpu_kwargs and cpu_kwargs["device"] is not None:
            to_device = to_device or False
            if _is_cuda(cpu_kwargs["device"]):
                cpu_kwargs["device"] = CPU
        pin = bool(cpu_kwargs.pop("pin_memory", False))
        # forced: ops on the CPU tensors inside a StandinTensor method stand for device ops
        self._classify(func, args, cpu_args, cpu_kwargs, on_device or self.rec.forced > 0, to_device)
        out = func(*cpu_args, **cpu_kwargs)
        if pin and isinstance(out, torch.Tensor):
            _mark_pinned(out)
        if func is aten._to_copy.default and "device" in kwargs and not _is_cuda(kwargs["device"]):
            return out  # explicitly to the host: a plain CPU tensor
        if func is aten.copy_.default and not isinstance(args[0], StandinTensor):
            return args[0]  # a copy into a host tensor
        if not (on_device or to_device):
            return out
        by_id = {id(x.elem): x for x in tree_flatten_tensors((args, kwargs)) if isinstance(x, StandinTensor)}

        def wrap(t):
            if isinstance(t, torch.Tensor) and not isinstance(t, StandinTensor):
                same = by_id.get(id(t))  # in-place ops return their own argument
                return same if same is not None else StandinTensor(t)
            return t

        return tree_map(wrap, out)

    def _classify(self, func, args, cpu_args, cpu_kwargs, on_device, to_device) -> None:
        name = func.__name__ if hasattr(func, "__name__") else str(func)
        if not on_device and not to_device:
            return  # pure host work
        self.rec.add("op", str(func))
        if func in _HOST_READS:
            self.rec.add("sync", f"a device value read on the host ({name}: .item(), bool(), .tolist(), torch.equal)")
        elif func in _LINALG_CHECKS:
            self.rec.add("sync", "linalg error check (torch.linalg.inv / cholesky / solve)")
        elif func in _DATA_DEPENDENT:
            self.rec.add("sync", f"data-dependent output size ({name})")
        elif func in (aten.index.Tensor, aten.index_put_.default, aten.index_put.default, aten._index_put_impl_.default):
            indices = cpu_args[1]
            if any(i is not None and i.dtype == torch.bool for i in indices):
                self.rec.add("sync", f"boolean-mask indexing ({name})")
        elif func is aten._to_copy.default:
            src = args[0]
            # .to("cpu", non_blocking=True) allocates its destination pinned: no wait
            if isinstance(src, StandinTensor) and cpu_kwargs.get("device") is not None and not to_device \
                    and not cpu_kwargs.get("non_blocking", False):
                self.rec.add("sync", "blocking device -> host copy (.cpu() / .to('cpu'))")
        elif func is aten.copy_.default:
            dst, src = args[0], args[1]
            non_blocking = bool(cpu_args[2]) if len(cpu_args) > 2 else bool(cpu_kwargs.get("non_blocking", False))
            if isinstance(src, StandinTensor) and not isinstance(dst, StandinTensor):
                if not non_blocking or not _is_pinned(dst):
                    self.rec.add("sync", "device -> host copy_ that is blocking or into pageable memory")
            elif isinstance(dst, StandinTensor) and not isinstance(src, StandinTensor):
                if not non_blocking or not _is_pinned(src):
                    self.rec.add("sync", "host -> device copy_ that is blocking or from pageable memory")


def tree_flatten_tensors(tree) -> list:
    from torch.utils._pytree import tree_flatten

    return [x for x in tree_flatten(tree)[0] if isinstance(x, torch.Tensor)]


class StandinGPU:
    """Context manager; `.rec` holds the log. Use a fresh one per measurement or `rec.clear()`."""

    def __init__(self) -> None:
        self.rec = Recorder()
        self.default_stream = FakeStream(name="default")
        self._stack = contextlib.ExitStack()

    # -- the torch entry points that never reach the dispatcher on a CPU-only build

    def _tensor_to(self, orig):
        rec = self.rec

        def to(t, *args, **kwargs):
            copy = kwargs.pop("copy", False)
            device, dtype, non_blocking, memory_format = torch._C._nn._parse_to(*args, **kwargs)
            dtype, memory_format = dtype or t.dtype, memory_format or torch.preserve_format
            if isinstance(t, StandinTensor):
                if device is not None and not _is_cuda(device):
                    rec.add("op", "device -> host copy")
                    if not non_blocking:  # non_blocking=True allocates the host tensor pinned
                        rec.add("sync", "blocking device -> host copy (.cpu() / .to('cpu'))")
                    return orig(t.elem, dtype, copy=True, memory_format=memory_format)
                with rec.on_device():
                    out = orig(t.elem, dtype, copy=copy, memory_format=memory_format)
                return t if out is t.elem else StandinTensor(out)
            if _is_cuda(device):
                rec.add("op", "host -> device copy")
                if not non_blocking or not _is_pinned(t):
                    rec.add("sync", "host -> device copy that is blocking or from pageable memory")
                return StandinTensor(orig(t, dtype, copy=True, memory_format=memory_format))
            if copy:
                kwargs["copy"] = True
            return orig(t, *args, **kwargs)

        return to

    def _factory(self, orig):
        rec = self.rec

        def make(data, *args, device=None, **kwargs):
            if _is_cuda(device):
                rec.add("op", f"{orig.__name__}(..., device=cuda)")
                rec.add("sync", f"torch.{orig.__name__}(..., device=cuda): a blocking host -> device copy")
                return StandinTensor(orig(data, *args, **kwargs).clone())
            return orig(data, *args, device=device, **kwargs)

        return make

    def __enter__(self) -> "StandinGPU":
        rec, patch = self.rec, self._patch
        rec.streams[:] = [self.default_stream]
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
        patch(torch.cuda, "synchronize", lambda device=None: rec.add("sync", "torch.cuda.synchronize()"))
        patch(torch.cuda, "empty_cache", lambda: None)
        patch(torch.Tensor, "to", self._tensor_to(torch.Tensor.to))
        patch(torch.Tensor, "cuda", lambda t, device=None, non_blocking=False: t.to("cuda", non_blocking=non_blocking))
        patch(torch.Tensor, "cpu", lambda t, memory_format=torch.preserve_format: t.to("cpu", memory_format=memory_format))
        patch(torch.Tensor, "pin_memory", lambda t, device=None: self._pin(t))
        patch(torch.Tensor, "is_pinned", lambda t, device=None: _is_pinned(t))
        patch(torch.Tensor, "record_stream", lambda t, s: rec.log.append(Entry("record_stream", f"tensor used on {s.name}", rec.current.name)))
        # Module.to("cuda") must store the StandinTensor itself, not `param.data = ...` it
        compatible = torch._has_compatible_shallow_copy_type
        patch(torch, "_has_compatible_shallow_copy_type",
              lambda input, from_: not isinstance(from_, StandinTensor) and compatible(input, from_))
        patch(torch, "tensor", self._factory(torch.tensor))
        patch(torch, "as_tensor", self._factory(torch.as_tensor))
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
        self.rec.streams.append(stream)
        try:
            yield
        finally:
            self.rec.streams.pop()


def to_standin(module: torch.nn.Module) -> torch.nn.Module:
    """Move a module's parameters and buffers onto the stand-in device (call inside StandinGPU)."""
    return module.to("cuda")
