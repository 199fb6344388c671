# SPDX-License-Identifier: MIT
"""Arrays and groups: ``open``, ``create``, ``Array``, ``Group``."""

import collections.abc
import itertools
import json
import operator
import os

import numpy as np

from . import _sluice
from ._cache import ChunkCache, cache_bytes
from ._select import region

__all__ = ["Array", "Group", "open", "create"]

# The options of a store, as sluice's command line has them.
_STORE_OPTIONS = (
    "endpoint",
    "region",
    "profile",
    "anonymous",
    "io_concurrency",
    "retries",
    "deadline_s",
    "missing_on_403",
)


def _location(path_or_url):
    """A URL as given, a local path made absolute (so a pickled array
    opens the same node from another working directory)."""
    if isinstance(path_or_url, os.PathLike):
        path_or_url = os.fspath(path_or_url)
    if not isinstance(path_or_url, str):
        raise TypeError(
            "a path or URL (str or os.PathLike), not %s" % type(path_or_url).__name__
        )
    if path_or_url == "":
        raise ValueError("an empty path")
    if "://" in path_or_url:
        return path_or_url
    return os.path.abspath(path_or_url)


def _store_options(options):
    unknown = sorted(set(options) - set(_STORE_OPTIONS))
    if unknown:
        raise TypeError(
            "unknown store option%s %s (known: %s)"
            % ("s" if len(unknown) > 1 else "", ", ".join(unknown), ", ".join(_STORE_OPTIONS))
        )
    return {k: v for k, v in options.items() if v is not None}


def _error(code, message, path=None):
    """A sluice.Error raised from Python, shaped as the C side makes them."""
    e = _sluice.Error(message)
    e.message = message
    e.code = code
    e.status = None
    e.source = e.path = path
    e.pointer = None
    e.chunk = None
    e.line = None
    e.column = None
    return e


def _open_store(location, options, *, writable, create):
    return _sluice.Store(location, read_only=not writable, create=create, **options)


class Array:
    """A Zarr array (v2 or v3, sharded or not) in a local or remote store.

    ``a[sel]`` reads a numpy array: ``sel`` is what numpy takes of basic
    indexing (integers, negative ones too, slices with any step, ``...``,
    ``None``).  ``a[sel] = value`` writes a numpy array or a scalar,
    broadcast to the selection as numpy does; shards are written through a
    transaction, each once and whole.  Reads and writes release the GIL and
    run on sluice's worker pool, so several Python threads may use one
    Array at once.

    Arrays pickle by their location and store options: the copy reopens the
    same node (local paths are absolute), so ``dask.array.from_array(a,
    chunks=a.chunks)`` works, on dask.distributed too.
    """

    __slots__ = ("_a_obj", "_pid", "_location", "_path", "_options", "_writable", "_cache",
                 "__weakref__")

    def __init__(self, *args, **kwargs):
        raise TypeError("open arrays with sluice.open(...) or make them with sluice.create(...)")

    @classmethod
    def _make(cls, c_array, location, path, options, writable, cache=0):
        self = object.__new__(cls)
        self._a_obj = c_array
        self._pid = os.getpid()
        self._location = location
        self._path = path
        self._options = options
        self._writable = writable
        self._cache = ChunkCache(cache, c_array.shape, c_array.chunks) if cache > 0 else None
        return self

    @property
    def _a(self):
        """The open array; in a child after fork, opened again (what the
        parent opened is not the child's to use)."""
        if self._pid != os.getpid():
            store = _open_store(self._location, self._options, writable=self._writable,
                                create=False)
            self._a_obj = store.open_array(self._path)
            self._pid = os.getpid()
            if self._cache is not None:
                self._cache = ChunkCache(self._cache.budget, self._a_obj.shape,
                                         self._a_obj.chunks)
        return self._a_obj

    # ---- metadata ------------------------------------------------------

    @property
    def shape(self):
        """The shape, a tuple of ints."""
        return self._a.shape

    @property
    def ndim(self):
        """The number of dimensions."""
        return len(self._a.shape)

    @property
    def size(self):
        """The number of elements."""
        n = 1
        for s in self._a.shape:
            n *= s
        return n

    @property
    def dtype(self):
        """The element type, a numpy dtype (native byte order)."""
        return self._a.dtype

    @property
    def chunks(self):
        """The chunk shape (the inner chunks of a sharded array)."""
        return self._a.chunks

    @property
    def shards(self):
        """The shard shape, or None when the array is not sharded."""
        return self._a.shards

    @property
    def fill_value(self):
        """The value of elements never written, a numpy scalar."""
        return self._a.fill_value

    @property
    def zarr_format(self):
        """2 or 3."""
        return self._a.zarr_format

    @property
    def dimension_names(self):
        """A tuple of names (None for a dimension without one), or None."""
        return self._a.dimension_names

    @property
    def codecs(self):
        """The codec chain, described as ``sluice info`` does."""
        return self._a.codecs

    @property
    def attrs(self):
        """The user attributes, a new dict on each access (read only: write
        them with ``create(..., attrs=...)``)."""
        return json.loads(self._a.attrs_json)

    @property
    def cache_info(self):
        """The chunk cache's state (``open(..., cache=...)``): a dict of
        ``budget``, ``bytes``, ``chunks``, ``hits`` and ``misses``, or None
        without a cache."""
        return self._cache.info() if self._cache is not None else None

    @property
    def url(self):
        """Where the array is: its store's location and path."""
        if self._path == "":
            return self._location
        return self._location.rstrip("/") + "/" + self._path

    def __len__(self):
        if self.ndim == 0:
            raise TypeError("len() of a 0-d array")
        return self._a.shape[0]

    def __repr__(self):
        return "<sluice.Array %s shape=%s dtype=%s chunks=%s%s>" % (
            self.url,
            self.shape,
            self.dtype,
            self.chunks,
            "" if self.shards is None else " shards=%s" % (self.shards,),
        )

    # ---- reading and writing ------------------------------------------

    def __getitem__(self, sel):
        s = region(sel, self.shape)
        if s.empty:
            return np.empty(s.shape, dtype=self.dtype)
        key = self._cache.chunk_of(s.start, s.stop) if self._cache is not None else None
        if key is not None:
            # Within one chunk: from the chunk decoded once, a copy out.
            block = self._cache.get(key, self._a.read)
            origin = self._cache.bounds(key)[0]
            inner = tuple(slice(a - o, b - o) for a, b, o in zip(s.start, s.stop, origin))
            out = block[inner][s.index]
            return out.copy() if isinstance(out, np.ndarray) else out
        box = self._a.read(s.start, s.stop)
        out = box[s.index]
        if s.dense:
            return out
        # A strided pick of the box: copy it, so the box's memory goes.
        return np.ascontiguousarray(out) if out.ndim else out

    def __setitem__(self, sel, value):
        if not self._writable:
            raise _error("EACCES", "%s was opened read only (sluice.open(..., mode=\"r+\"))" % self.url, self.url)
        s = region(sel, self.shape)
        try:
            value = np.asarray(value)
        except Exception as e:  # noqa: BLE001 - numpy's own message says why
            raise TypeError("a value to write: %s" % e) from None
        if value.dtype.kind not in "biufc?":
            raise TypeError("cannot write values of dtype %s into a %s array" % (value.dtype, self.dtype))
        if s.empty:
            np.broadcast_to(value, s.shape)  # the shapes must still agree
            return
        try:
            if all(abs(step) == 1 for step in _steps(s)):
                # Every element of the box is written: no read first.
                box = np.empty(tuple(b - a for a, b in zip(s.start, s.stop)), dtype=self.dtype)
                box[s.index] = value
                self._a.write(s.start, s.stop, box)
            else:
                self._write_strided(s, value)
        finally:
            if self._cache is not None:
                self._cache.drop(s.start, s.stop)

    def _write_strided(self, s, value):
        """Write a selection with gaps, unit by unit (shards, else chunks):
        each unit holding selected elements is read, changed where selected
        and written, and no other, so writes to other units are left alone."""
        steps = _steps(s)
        v = _per_dimension(np.broadcast_to(value, s.shape), s.index)
        unit = self.shards or self.chunks
        pieces = [_unit_pieces(a, b, abs(k), u) for a, b, k, u in zip(s.start, s.stop, steps, unit)]
        for combo in itertools.product(*pieces):
            start = tuple(p[0] for p in combo)
            stop = tuple(p[1] for p in combo)
            box = self._a.read(start, stop)
            box[tuple(slice(None, None, abs(k)) for k in steps)] = v[tuple(p[2] for p in combo)]
            self._a.write(start, stop, box)

    def read(self, sel=...):
        """``a.read(sel)`` is ``a[sel]``; ``a.read()`` reads the whole array."""
        return self[sel]

    def read_many(self, selections):
        """Read several selections in one batched plan.

        Every chunk the selections meet is fetched and decoded once, however
        many selections it holds, and remote requests are coalesced and run
        concurrently.  Returns a list of numpy arrays, one per selection, in
        order.  A chunk that cannot be read raises sluice.Error naming it.
        """
        if isinstance(selections, (str, bytes)) or not isinstance(
            selections, collections.abc.Iterable
        ):
            raise TypeError("read_many: a list of selections")
        resolved = [region(sel, self.shape) for sel in selections]
        boxes = [(s.start, s.stop) for s in resolved if not s.empty]
        read = iter(self._a.read_many(boxes)) if boxes else iter(())
        out = []
        for s in resolved:
            if s.empty:
                out.append(np.empty(s.shape, dtype=self.dtype))
                continue
            r = next(read)[s.index]
            out.append(r if s.dense or not r.ndim else np.ascontiguousarray(r))
        return out

    def checksum(self):
        """The SHA-256 of the array's values in C order, as hex: what
        ``sluice checksum`` prints for it."""
        return self._a.checksum()

    def __array__(self, dtype=None, copy=None):
        out = self[...]
        if dtype is not None:
            out = out.astype(dtype, copy=False)
        return out

    # ---- pickling ------------------------------------------------------

    def __reduce__(self):
        cache = self._cache.budget if self._cache is not None else 0
        return (
            _reopen_array,
            (self._location, self._path, self._options, self._writable, cache),
        )


def _steps(s):
    """The step of selection `s` in each array dimension (1 for an integer)."""
    out = []
    for e in s.index:
        if e is None or e is Ellipsis:
            continue
        out.append(1 if isinstance(e, int) else (e.step or 1))
    return out


def _per_dimension(v, index):
    """Values `v` of a selection's shape as one axis per array dimension,
    each in ascending order of the array's indices (new axes dropped,
    integer dimensions given extent 1, negative steps turned round)."""
    take, flip, dim, ints = [], [], 0, []
    for e in index:
        if e is Ellipsis:
            continue
        if e is None:
            take.append(0)
        elif isinstance(e, int):
            ints.append(dim)
            flip.append(slice(None))
            dim += 1
        else:
            take.append(slice(None))
            flip.append(slice(None, None, -1) if (e.step or 1) < 0 else slice(None))
            dim += 1
    v = v[tuple(take)]
    for d in ints:
        v = np.expand_dims(v, d)
    return v[tuple(flip)]


def _unit_pieces(lo, hi, step, unit):
    """For indices lo, lo + step, ... below hi: per unit of `unit`
    elements that holds some, (first, last + 1, their positions as a slice)."""
    out = []
    for u in range(lo // unit, (hi - 1) // unit + 1):
        a, b = max(lo, u * unit), min(hi, (u + 1) * unit)
        j0, j1 = -(-(a - lo) // step), (b - 1 - lo) // step
        if j0 <= j1:
            out.append((lo + j0 * step, lo + j1 * step + 1, slice(j0, j1 + 1)))
    return out


def _reopen_array(location, path, options, writable, cache=0):
    store = _open_store(location, options, writable=writable, create=False)
    return Array._make(store.open_array(path), location, path, options, writable, cache)


class Group(collections.abc.Mapping):
    """A Zarr group: a mapping from its members' names to Arrays and Groups.

    ``g["name"]`` opens a direct member (``g["a/b"]`` a deeper one);
    iterating gives the direct members' names.  ``attrs`` is the group's
    attributes, a dict.
    """

    def __init__(self, *args, **kwargs):
        raise TypeError("open groups with sluice.open(...)")

    @classmethod
    def _make(cls, store, location, path, options, writable, cache=0):
        self = object.__new__(cls)
        self._store_obj = store
        self._pid = os.getpid()
        self._location = location
        self._path = path
        self._options = options
        self._writable = writable
        self._cache = cache
        self._members = None
        return self

    @property
    def _store(self):
        """The open store; in a child after fork, opened again."""
        if self._pid != os.getpid():
            self._store_obj = _open_store(self._location, self._options,
                                          writable=self._writable, create=False)
            self._pid = os.getpid()
        return self._store_obj

    def _children(self):
        if self._members is None:
            prefix = self._path + "/" if self._path else ""
            kids = {}
            for p, kind in self._store.members(self._path):
                rel = p[len(prefix):] if p.startswith(prefix) else p
                if rel and "/" not in rel:
                    kids[rel] = kind
            self._members = dict(sorted(kids.items()))
        return self._members

    @property
    def attrs(self):
        """The group's attributes (a new dict on each access)."""
        return json.loads(self._store.group_attrs(self._path))

    @property
    def url(self):
        """Where the group is."""
        if self._path == "":
            return self._location
        return self._location.rstrip("/") + "/" + self._path

    def __getitem__(self, name):
        if not isinstance(name, str):
            raise TypeError("group members are named by str, not %s" % type(name).__name__)
        parts = [p for p in name.split("/") if p not in ("", ".")]
        if not parts or ".." in parts:
            raise KeyError(name)
        path = "/".join(([self._path] if self._path else []) + parts)
        kind, _ = self._store.probe(path)
        if kind == "array":
            return Array._make(self._store.open_array(path), self._location, path,
                               self._options, self._writable, self._cache)
        if kind == "group":
            return Group._make(self._store, self._location, path, self._options,
                               self._writable, self._cache)
        raise KeyError(name)

    def __iter__(self):
        return iter(self._children())

    def __len__(self):
        return len(self._children())

    def __repr__(self):
        return "<sluice.Group %s members=%s>" % (self.url, list(self._children()))

    def __reduce__(self):
        return (_reopen_group,
                (self._location, self._path, self._options, self._writable, self._cache))


def _reopen_group(location, path, options, writable, cache=0):
    store = _open_store(location, options, writable=writable, create=False)
    return Group._make(store, location, path, options, writable, cache)


def open(path_or_url, mode="r", cache=None, **store_options):
    """Open the Zarr array or group at ``path_or_url``.

    ``path_or_url``: a local path, ``file:///abs/path``, ``http(s)://...``
    or ``s3://bucket/prefix``.  ``mode``: ``"r"`` (read only, the default)
    or ``"r+"`` (writes allowed).  Store options, as ``sluice``'s command
    line has them: ``endpoint`` (an S3-compatible server's URL), ``region``,
    ``profile``, ``anonymous`` (unsigned S3 requests), ``io_concurrency``
    (requests in flight), ``retries`` (tries after the first),
    ``deadline_s`` (per remote request, retries included) and
    ``missing_on_403`` (read a 403 as an absent key).

    ``cache``: keep decoded chunks for reads that fall within one chunk
    (``True``: 256 MiB; or bytes, or a size such as ``"64M"``; per array,
    least recently used out), so reading element by element does not
    decode a chunk per element.  Writes through the same Array drop what
    they touch; writes by others are not seen while a chunk is kept: for
    data that does not change while it is read.  Default: no cache.

    Returns an Array or a Group; raises sluice.Error (code ``"ENOENT"``)
    when nothing Zarr is stored there.
    """
    if mode not in ("r", "r+"):
        raise ValueError('mode=%r: "r" or "r+"' % (mode,))
    location = _location(path_or_url)
    options = _store_options(store_options)
    writable = mode == "r+"
    budget = cache_bytes(cache)
    store = _open_store(location, options, writable=writable, create=False)
    kind, _ = store.probe("")
    if kind == "array":
        return Array._make(store.open_array(""), location, "", options, writable, budget)
    if kind == "group":
        return Group._make(store, location, "", options, writable, budget)
    raise _error("ENOENT", "%s: no Zarr array or group is stored there" % location, location)


def _fill_bytes(fill_value, dtype):
    if fill_value is None:
        return None
    try:
        v = np.array(fill_value, dtype=dtype)
    except (TypeError, ValueError, OverflowError) as e:
        raise ValueError("fill_value=%r is not a %s: %s" % (fill_value, dtype, e)) from None
    if v.ndim != 0:
        raise ValueError("fill_value: one value, not an array of shape %s" % (v.shape,))
    if dtype.kind in "iu" and not isinstance(fill_value, (bool, np.bool_)):
        if int(v) != fill_value:
            raise ValueError("fill_value=%r does not fit %s" % (fill_value, dtype))
    return v.astype(dtype.newbyteorder("="), copy=False).tobytes()


def _int_tuple(value, name, rank=None):
    if isinstance(value, (int, np.integer)) and rank is not None:
        value = (value,) * rank
    try:
        out = tuple(_index(v) for v in value)
    except TypeError:
        raise TypeError("%s: a sequence of integers, not %r" % (name, value)) from None
    if rank is not None and len(out) != rank:
        raise ValueError("%s has %d entries for an array of %d dimensions" % (name, len(out), rank))
    if any(v < 0 for v in out):
        raise ValueError("%s=%s: negative" % (name, out))
    return out


def _index(v):
    if isinstance(v, (bool, np.bool_)):
        raise TypeError("bool")
    return operator.index(v)


def create(
    path_or_url,
    shape,
    chunks,
    dtype,
    shards=None,
    codec="zstd:1",
    zarr_format=3,
    fill_value=0,
    attrs=None,
    overwrite=False,
    **store_options,
):
    """Create a Zarr array and return it, open for writing.

    ``shape``, ``chunks`` (the inner chunks when sharded) and ``shards``
    (Zarr v3 only; each a multiple of ``chunks``) have one entry per
    dimension.  ``dtype``: anything ``numpy.dtype`` takes that sluice stores
    (bool, int8 ... uint64, float16/32/64, complex64/128).  ``codec`` as
    ``--codec`` spells it: ``"none"``, ``"zstd:LEVEL"``, ``"gzip:LEVEL"``,
    ``"blosc:CNAME:CLEVEL[:shuffle]"``, optionally ``",crc32c"``.
    ``fill_value``: the value of chunks never written.  ``attrs``: a dict of
    JSON-serialisable user attributes.  ``overwrite``: replace an array or
    group stored there (never a file or a non-Zarr directory).  Store
    options as for ``open``.
    """
    location = _location(path_or_url)
    options = _store_options(store_options)
    try:
        dt = np.dtype(dtype)
    except TypeError as e:
        raise TypeError("dtype=%r: %s" % (dtype, e)) from None
    shape = _int_tuple(shape, "shape")
    chunks = _int_tuple(chunks, "chunks", len(shape))
    if shards is not None:
        shards = _int_tuple(shards, "shards", len(shape))
    if zarr_format not in (2, 3):
        raise ValueError("zarr_format=%r: 2 or 3" % (zarr_format,))
    if not isinstance(codec, str):
        raise TypeError("codec: a string such as \"zstd:1\"")
    attrs_json = None
    if attrs is not None:
        if not isinstance(attrs, collections.abc.Mapping):
            raise TypeError("attrs: a dict")
        attrs_json = json.dumps(dict(attrs), allow_nan=False)
    store = _open_store(location, options, writable=True, create=True)
    a = store.create_array(
        "",
        shape,
        chunks,
        dt.name,
        shards,
        codec,
        zarr_format,
        _fill_bytes(fill_value, dt),
        attrs_json,
        bool(overwrite),
    )
    return Array._make(a, location, "", options, True)
