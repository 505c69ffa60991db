"""The kinds of field a JSON record declares (`realtime.record`: the tracks file's): numbers of a shape, flags,
whole numbers, text, names, weights by name, objects of parts. Each checks a JSON value as read (`check`, raising
ValueError that names the field and what is wrong) and writes one as JSON text (`text`, None when it cannot be
written finite). No number is NaN, Infinity or beyond float32 either way; where null may stand is the field's
`Null` rule.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from enum import Enum
from functools import cached_property, lru_cache
from typing import Any, Callable, Optional

import numpy as np

FLOAT32_MAX = float(np.finfo(np.float32).max)  # receivers (OSC floats) and exports (C3D, glTF) hold float32
INT64 = (-(2 ** 63), 2 ** 63 - 1)  # track ids and frame numbers must fit the int64 arrays of NPZ and C3D
MAX_SIDE = 2 ** 31 - 1  # an image side in pixels
MIN_QUATERNION = 0.5  # a rotation quaternion shorter than this is none (a receiver would divide by about 0)


class Null(Enum):
    """Where a field may be null (or left out), and what that means."""

    NEVER = "never"  # always there, and no number in it is null
    WHOLE = "whole"  # the field may be null or left out: not computed; no number in it is null
    NUMBERS = "numbers"  # always there; a number in it may be null: that value is not known
    ANY = "any"  # the field may be null or left out, and a number in it may be null

    @property
    def whole(self) -> bool:
        return self in (Null.WHOLE, Null.ANY)

    @property
    def numbers(self) -> bool:
        return self in (Null.NUMBERS, Null.ANY)


NULL_TEXT = {Null.NEVER: "never", Null.WHOLE: "the field: not computed", Null.NUMBERS: "a number: not known",
             Null.ANY: "the field: not computed; a number: not known"}
K, B = "K", "B"  # shape symbols: the header's keypoint_names and bone_names counts


@dataclass(frozen=True)
class Dims:
    """The sizes a file's header gives its records."""

    keypoints: int
    bones: Optional[tuple[str, ...]] = None

    def size(self, symbol) -> int:
        if symbol == K:
            return self.keypoints
        if symbol == B:
            return len(self.bones or ())
        return int(symbol)

    def shape(self, symbols: tuple) -> tuple[int, ...]:
        shapes = self.__dict__.setdefault("_shapes", {})  # the writer asks for the same few shapes per person
        if symbols not in shapes:
            shapes[symbols] = tuple(self.size(n) for n in symbols)
        return shapes[symbols]


class NonFinite:
    """A JSON NaN / Infinity / -Infinity token as read: kept, not made a float, so the check that
    meets it refuses it by its field's name."""

    __slots__ = ("token",)

    def __init__(self, token: str):
        self.token = token

    def __repr__(self) -> str:
        return self.token


def parse_line(line: str):
    """One JSON line; NaN and Infinity tokens become `NonFinite` (refused where they are met)."""
    return json.loads(line, parse_constant=NonFinite)


def _short(value, limit: int = 40) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


def is_number(value) -> bool:
    """A JSON number (not a boolean) that fits a float64 (an integer of 400 digits does not)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    return isinstance(value, float) or abs(value) <= 1.7976931348623157e308


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _non_finite(value) -> bool:
    return isinstance(value, NonFinite) or (isinstance(value, float) and not math.isfinite(value))


def possessive(name: str) -> str:
    return name + ("'" if name.endswith("s") else "'s")


def _refuse_number(value, what: str) -> None:
    """The one sentence for a number that is not finite or is beyond float32."""
    if _non_finite(value):
        raise ValueError(f"{what} holds {value!r}, not a finite number")
    raise ValueError(f"{what} holds {_short(value)}, beyond the float32 range (3.4e38) receivers and exports hold")


def refuse_non_finite(value, what: str) -> None:
    """Walk a value the schema does not describe (an unknown field, the writer's model names): a NaN or
    Infinity token or an infinite number anywhere in it is refused with its place."""
    if _non_finite(value):
        raise ValueError(f"{what} holds {value!r}, not a finite number")
    if isinstance(value, dict):
        for key, item in value.items():
            refuse_non_finite(item, f"{possessive(what)} {key}")
    elif isinstance(value, list):
        for item in value:
            refuse_non_finite(item, what)


# -- the kinds of field: each checks a JSON value (`check`, reading) and writes one (`text`) -----------


@dataclass(frozen=True)
class Field:
    """One field of a record: its JSON `key`, `meaning` (the docs), the version it arrived in (`since`),
    its null rule and unit; `expect`: what a wrong value is not, in the sentence that refuses it; `omit`:
    left out (not written null) when not known. Subclasses say the type, check and write it."""

    key: str
    meaning: str
    since: int = 1
    null: Null = Null.WHOLE
    unit: str = ""
    expect: str = ""
    omit: bool = False

    type_text = "value"
    decimals_text = ""

    def check(self, value, what: str, dims: Dims):
        raise NotImplementedError

    def text(self, value, dims: Dims) -> Optional[str]:
        """JSON text of `value` (not None), or None when it cannot be written finite (it is left out)."""
        return json.dumps(value, separators=(",", ":"), allow_nan=False)

    def jsonable(self, value, dims: Dims):
        """`value` as plain JSON data, as `text` writes it (None: cannot be written)."""
        text = self.text(value, dims)
        return None if text is None else json.loads(text)

    def read(self, record: dict, what: str, dims: Dims):
        """This field of a JSON object, checked; None when it is null or absent and may be."""
        value = record.get(self.key)
        name = f"{possessive(what)} {self.key}" if what else self.key
        if value is None:
            if not self.null.whole:
                raise ValueError(f"{name} is null; it never may be" if self.key in record else f"{name} is missing")
            return None
        return self.check(value, name, dims)

    def wrong(self, what: str, value, detail: str) -> ValueError:
        return ValueError(f"{what} is {_short(value)}, not {self.expect}" if self.expect else f"{what} {detail}")


@dataclass(frozen=True)
class Numbers(Field):
    """Numbers of a fixed shape (shape (): one number). `low` / `high`: bounds, per column or for all;
    `positive`: above `low`; `quaternion`: rotation quaternions (rows of 4, length >= MIN_QUATERNION);
    `unit_vector`: length 1; `short`: a shorter list accepted, its missing numbers not known (NaN)."""

    shape: tuple = ()
    decimals: Any = 3  # per column (a tuple) or for all
    low: Any = None
    high: Any = None
    positive: bool = False
    quaternion: bool = False
    unit_vector: bool = False
    short: Optional[int] = None
    shortest: bool = False  # one number written as the shortest text of its rounded value (1.01, not 1.010000)

    @property
    def type_text(self) -> str:
        return "number" if not self.shape else " x ".join(str(n) for n in self.shape) + " numbers"

    @property
    def decimals_text(self) -> str:
        return ", ".join(str(v) for v in dict.fromkeys(self.column_decimals))

    @cached_property
    def column_decimals(self) -> tuple[int, ...]:
        columns = 1 if not self.shape else int(self.shape[-1])
        return self.decimals if isinstance(self.decimals, tuple) else (self.decimals,) * columns

    def check(self, value, what: str, dims: Dims):
        if not self.shape:
            if _non_finite(value):
                _refuse_number(value, what)
            if not is_number(value):
                raise self.wrong(what, value, f"is {_short(value)}, not a number")
            if abs(value) > FLOAT32_MAX:
                _refuse_number(value, what)
            self._check_values(np.array([[float(value)]]), value, what)
            return float(value)
        shape = dims.shape(self.shape)
        if self.short is not None and isinstance(value, list) and len(value) == self.short:
            array = _numbers(value, what, (self.short,), self.null.numbers)
            array = np.concatenate([array, np.full(shape[0] - self.short, np.nan)])
        elif self.expect and len(shape) == 1 and (not isinstance(value, list) or len(value) != shape[0]):
            raise self.wrong(what, value, "")
        else:
            array = _numbers(value, what, shape, self.null.numbers)
        self._check_values(array.reshape(-1, shape[-1]), value, what)
        return array

    def _check_values(self, rows: np.ndarray, value, what: str) -> None:
        with np.errstate(invalid="ignore"):
            for bound, bad_of, word in ((self.low, lambda r, b: (r < b) | ((r == b) & self.positive),
                                         "above" if self.positive else "at least"),
                                        (self.high, lambda r, b: r > b, "at most")):
                if bound is None:
                    continue
                bound = np.broadcast_to(np.asarray(bound, np.float64), (rows.shape[1],))
                bad = bad_of(rows, bound)
                if bad.any():
                    column = np.nonzero(bad)[1][0]
                    raise self.wrong(what, value, f"holds {rows[bad][0]:g}, not {word} {bound[column]:g}")
        if self.quaternion:
            lengths = np.linalg.norm(rows, axis=1)
            if (lengths < MIN_QUATERNION).any():
                row = rows[lengths < MIN_QUATERNION][0]
                if len(rows) == 1:
                    raise ValueError(f"{what} is {_short(value)}, not a unit quaternion")
                raise ValueError(f"{what} holds {_short(row.tolist())}, not a unit quaternion (its length is "
                                 f"{np.linalg.norm(row):.3g})")
        if self.unit_vector and abs(np.linalg.norm(rows) - 1) > 1e-3:
            raise ValueError(f"{what} is {_short(value)}, not a unit vector")

    def text(self, value, dims: Dims) -> Optional[str]:
        decimals = self.column_decimals
        if not self.shape:
            value = float(value)
            if not abs(value) <= FLOAT32_MAX:
                return None
            return repr(round(value, decimals[0])) if self.shortest else _template((), decimals) % value
        shape = dims.shape(self.shape)
        flat = np.asarray(value, dtype=np.float64).reshape(-1)
        text = _template(shape, decimals) % tuple(flat.tolist())
        if np.abs(flat).max() <= FLOAT32_MAX:  # False with a NaN too
            return text
        if not self.null.numbers:
            return None  # no number here may be null: the field is left out
        huge = np.abs(flat) > FLOAT32_MAX  # inf, or finite beyond float32 (NaN: False)
        if not huge.any():  # only NaN: %-format wrote nan
            return text.replace("nan", "null")
        return _nulls(flat, ~huge & ~np.isnan(flat), shape, decimals)


@lru_cache(maxsize=64)
def _template(shape: tuple, decimals: tuple[int, ...]) -> str:
    """The %-format of `shape` numbers at fixed decimals per column: one %-format over a cached
    template, about 3x faster than json.dumps of lists (it runs for every person of every frame)."""
    if not shape:
        return f"%.{decimals[0]}f"
    row = "[" + ",".join(f"%.{n}f" for n in decimals) + "]"
    return row if len(shape) == 1 else "[" + ",".join([row] * shape[0]) + "]"


def _nulls(flat: np.ndarray, good: np.ndarray, shape: tuple, decimals: tuple[int, ...]) -> str:
    """The numbers written again, null for each that is not finite or is beyond float32 (rare: no fast path)."""
    values = [f"{v:.{decimals[i % len(decimals)]}f}" if ok else "null" for i, (v, ok) in
              enumerate(zip(flat.tolist(), good.tolist()))]
    rows = ["[" + ",".join(values[r:r + shape[-1]]) + "]" for r in range(0, len(values), shape[-1])]
    return rows[0] if len(shape) == 1 else "[" + ",".join(rows) + "]"


def _numbers(value, what: str, shape: tuple[int, ...], nulls: bool) -> np.ndarray:
    """JSON numbers (null -> NaN where `nulls`) of exactly `shape` as float64; text, booleans, lists of the
    wrong length, nulls where none may be, NaN tokens and numbers beyond float32 are refused by name."""
    expected = " x ".join(str(n) for n in shape)
    try:
        array = np.array(value)
    except (ValueError, TypeError):  # ragged
        raise ValueError(f"{what} is not a list of {expected} numbers") from None
    if array.shape != shape:
        found = f"shape {' x '.join(str(n) for n in array.shape) or 'a single value'}"
        raise ValueError(f"{what} has {found}, expected {expected} numbers{' or nulls' if nulls else ''}")
    if array.dtype.kind in "fiu":
        array = array.astype(np.float64)
    elif array.dtype.kind == "O":
        flat = array.reshape(-1)
        bad = next((v for v in flat if v is not None and not is_number(v)), None)
        if isinstance(bad, NonFinite):
            _refuse_number(bad, what)
        if bad is not None:
            raise ValueError(f"{what} holds {_short(bad)}, not a number{' or null' if nulls else ''}")
        if not nulls and any(v is None for v in flat):
            raise ValueError(f"{what} holds null; no number of it may be")
        array = np.array([np.nan if v is None else float(v) for v in flat], dtype=np.float64).reshape(shape)
    else:
        bad = next(iter(array.flat))
        raise ValueError(f"{what} holds {_short(bad.item() if isinstance(bad, np.generic) else bad)}, not a number"
                         f"{' or null' if nulls else ''}")
    beyond = np.abs(array) > FLOAT32_MAX  # also inf (a 1e999 in the file)
    if beyond.any():
        _refuse_number(array[beyond][0].item(), what)
    return array


@dataclass(frozen=True)
class Flags(Field):
    """`count` flags, 1 or 0 (true and false accepted); where numbers may be null a flag may be null too
    (then read as floats with NaN, else as bools)."""

    count: Any = 1

    @property
    def type_text(self) -> str:
        return f"{self.count} flags (1 or 0)"

    def check(self, value, what: str, dims: Dims):
        count = dims.size(self.count)
        nulls = self.null.numbers
        if (not isinstance(value, list) or len(value) != count
                or not all((nulls and v is None) or isinstance(v, bool) or (_is_int(v) and v in (0, 1)) for v in value)):
            raise self.wrong(what, value, f"is not a list of {count} flags (1 or 0{', or null' if nulls else ''})")
        if nulls:
            return np.array([np.nan if v is None else float(v) for v in value])
        return np.array(value, dtype=bool)

    def text(self, value, dims: Dims) -> Optional[str]:
        return "[" + ",".join(_FLAG_TEXT[np.asarray(value, bool).view(np.uint8)].tolist()) + "]"


_FLAG_TEXT = np.array(["0", "1"])


@dataclass(frozen=True)
class Flag(Field):
    """One flag: 1 or 0 (`boolean`: true or false, as JSON writes them); `default`: what an absent or
    null flag reads as."""

    boolean: bool = False
    default: Optional[bool] = None

    @property
    def type_text(self) -> str:
        return "true or false" if self.boolean else "1 or 0"

    def read(self, record: dict, what: str, dims: Dims):
        if record.get(self.key) is None and self.default is not None:
            return self.default
        return super().read(record, what, dims)

    def check(self, value, what: str, dims: Dims):
        if isinstance(value, bool) if self.boolean else (_is_int(value) and value in (0, 1)):
            return bool(value)
        raise ValueError(f"{what} is {_short(value)}, not {'true or false' if self.boolean else '1 or 0'}")

    def text(self, value, dims: Dims) -> Optional[str]:
        return ("true" if value else "false") if self.boolean else ("1" if value else "0")


@dataclass(frozen=True)
class Whole(Field):
    """A whole number from `low` to `high` (64 bits); `outside`: the sentence's end when it is not."""

    low: int = INT64[0]
    high: int = INT64[1]
    outside: str = "is outside the 64-bit range it must fit"
    type_text = "whole number"

    def check(self, value, what: str, dims: Dims):
        if not _is_int(value):
            raise self.wrong(what, value, f"is {_short(value)}, not a whole number{' or null' if self.null.whole else ''}")
        if not self.low <= value <= self.high:
            raise self.wrong(what, value, f"{_short(value)} {self.outside}")
        return int(value)

    def text(self, value, dims: Dims) -> Optional[str]:
        return str(int(value))


@dataclass(frozen=True)
class Text(Field):
    """A string; with `choices`, one of them."""

    choices: tuple = ()

    @property
    def type_text(self) -> str:
        return " or ".join(f"`{c}`" for c in self.choices) if self.choices else "text"

    def check(self, value, what: str, dims: Dims):
        if self.choices and value not in self.choices:
            raise ValueError(f"{what} is {_short(value)}, not one of {', '.join(self.choices)}")
        if not isinstance(value, str):
            raise self.wrong(what, value, f"is {_short(value)}, not text")
        return value


@dataclass(frozen=True)
class Names(Field):
    """A list of distinct names."""

    type_text = "list of names"

    def check(self, value, what: str, dims: Dims):
        if not isinstance(value, list) or not value or not all(isinstance(n, str) and n for n in value):
            raise ValueError(f"{what} is {_short(value)}, not a list of names")
        if len(set(value)) != len(value):
            raise ValueError(f"{what} names {next(n for n in value if value.count(n) > 1)!r} twice")
        return tuple(value)


@dataclass(frozen=True)
class Size(Field):
    """[width, height]: whole, non-negative pixels that fit an int32."""

    type_text = "2 whole numbers"

    def check(self, value, what: str, dims: Dims):
        if not isinstance(value, list) or len(value) != 2 or not all(is_number(v) for v in value) \
                or not all(math.isfinite(v) and v == int(v) and 0 <= v <= MAX_SIDE for v in value):
            raise ValueError(f"{what} is {_short(value)}, not [width, height] in whole pixels")
        return int(value[0]), int(value[1])

    def text(self, value, dims: Dims) -> Optional[str]:
        return f"[{int(value[0])},{int(value[1])}]"


@dataclass(frozen=True)
class Weights(Field):
    """An object of weights by name ({"jawOpen": 0.4, ...}) from 0 to 1, read in the order of `names`; a
    name the record lacks, or null, is not known (NaN)."""

    names: tuple = ()
    decimals: int = 3
    type_text = "object of numbers"

    @property
    def decimals_text(self) -> str:
        return str(self.decimals)

    def check(self, value, what: str, dims: Dims):
        if not isinstance(value, dict):
            raise ValueError(f"{what} is not an object of blendshape weights")
        for name, weight in value.items():
            if _non_finite(weight):
                _refuse_number(weight, f"{what} {name}")
            if weight is not None and not is_number(weight):
                raise ValueError(f"{what} {name} is {_short(weight)}, not a number or null")
            if weight is not None and not 0 <= weight <= 1:
                raise ValueError(f"{what} {name} is {_short(weight)}, not a weight from 0 to 1")
        return np.array([np.nan if value.get(name) is None else float(value[name]) for name in self.names])

    def text(self, value, dims: Dims) -> Optional[str]:
        values = np.clip(np.nan_to_num(np.asarray(value, dtype=np.float64), nan=0.0), 0.0, 1.0)
        return _weights_template(self.names, self.decimals) % tuple(values.tolist())


@lru_cache(maxsize=4)
def _weights_template(names: tuple[str, ...], decimals: int) -> str:
    return "{" + ",".join(f'"{name}":%.{decimals}f' for name in names) + "}"


@dataclass(frozen=True)
class Free(Field):
    """An object of the writer's own (model names, software): any JSON but non-finite numbers."""

    type_text = "object"

    def check(self, value, what: str, dims: Dims):
        if not isinstance(value, dict):
            raise ValueError(f"{what} is {_short(value)}, not an object")
        refuse_non_finite(value, what)
        return value


@dataclass(frozen=True)
class Group(Field):
    """An object of named `parts` (fields), read into `build(values by key, dims)` and written from
    `parts_of(value)` (the parts' values in order)."""

    parts: tuple = ()
    build: Callable = None
    parts_of: Callable = None
    dims_of: Optional[Callable] = None  # (value, dims) -> the dims its parts are written with (default: the file's)
    type_text = "object"

    def check(self, value, what: str, dims: Dims):
        if not isinstance(value, dict):
            raise self.wrong(what, value, f"is {_short(value)}, not an object of {', '.join(p.key for p in self.parts)}")
        if dims.bones is None and any(B in getattr(p, "shape", ()) or getattr(p, "count", None) == B for p in self.parts):
            raise ValueError(f"{what} are given but the header has no bone_names")
        keys = {p.key for p in self.parts}
        for key, item in value.items():
            if key not in keys:
                refuse_non_finite(item, f"{possessive(what)} {key}")
        return self.build({p.key: p.read(value, what, dims) for p in self.parts}, dims)

    def text(self, value, dims: Dims) -> Optional[str]:
        items = []
        dims = dims if self.dims_of is None else self.dims_of(value, dims)
        for part, item in zip(self.parts, self.parts_of(value)):
            text = None if item is None else part.text(item, dims)
            if text is None:
                if item is not None or not part.null.whole:
                    return None  # a part that must be there could not be written: the whole is left out
                if not part.omit:
                    items.append(f'"{part.key}":null')
                continue
            items.append(f'"{part.key}":{text}')
        return "{" + ",".join(items) + "}"
