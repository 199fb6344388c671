# SPDX-License-Identifier: MIT
"""Running graphs: ``run``, ``Report``, and the ``downsample`` and
``pyramid`` helpers that mirror the command line."""

import json
import os

from . import _sluice
from ._array import _error

__all__ = ["Report", "run", "downsample", "pyramid"]

_MISSING = {None: -1, "fill": 0, "error": 1}
_POLICY = {None: -1, "collect": 0, "fail_fast": 1}


class Report:
    """What a run did.

    ``ok``: every chunk succeeded and the outputs were put in place.
    ``counts``: a dict of the run's counts (``n_chunks``, ``n_ok``,
    ``n_failed``, ``n_upstream``, ``n_canceled``, ``n_tasks``,
    ``bytes_read``, ``bytes_written``, ``peak_bytes``, ``elapsed_s``,
    ``remote_requests``, ``remote_retries``, ...), also readable as
    attributes (``report.n_failed``).  ``failed``: one dict per failed chunk
    (``put``, ``chunk`` coordinates, ``code``, ``message``, ``path``).
    ``stats``: per stats node, a list of result sets (dicts), or a string
    saying why there are none.  ``error``: the run's own error, if any;
    ``commit_error``: why the outputs could not be put in place, if so.
    """

    def __init__(self, raw):
        self._raw = raw
        self.ok = bool(raw["ok"]) and raw["commit_error"] is None
        self.failed = raw["failed"]
        self.stats = raw["stats"]
        self.error = raw["error"]
        self.commit_error = raw["commit_error"]
        skip = {"ok", "failed", "stats", "status", "error", "commit_error"}
        self.counts = {k: v for k, v in raw.items() if k not in skip}

    def __getattr__(self, name):
        counts = self.__dict__.get("counts", {})
        if name in counts:
            return counts[name]
        raise AttributeError(name)

    @property
    def puts(self):
        """The names of the graph's puts (those with a status array)."""
        return sorted(self._raw["status"])

    def status(self, put):
        """The status codes (uint8, 0 for success; ``sluice.status_name``
        names them) over the chunk grid of put ``put``'s array."""
        try:
            return self._raw["status"][put]
        except KeyError:
            raise KeyError(
                "no put named %r (the graph's puts: %s)" % (put, ", ".join(self.puts) or "none")
            ) from None

    def raise_if_failed(self):
        """Raise sluice.Error describing the first failure, if any."""
        if self.ok:
            return self
        if self.failed:
            f = self.failed[0]
            msg = "%d chunk%s failed; first: %s chunk %s: %s" % (
                self.counts["n_failed"],
                "" if self.counts["n_failed"] == 1 else "s",
                f["put"],
                f["chunk"],
                f["message"],
            )
            e = _error(f["code"], msg, f["path"] or None)
            e.chunk = f["chunk"]
        else:
            msg = self.error or self.commit_error or "the run failed"
            e = _error(self.counts.get("run_error"), msg)
        raise e

    def __repr__(self):
        return "<sluice.Report ok=%s chunks=%d failed=%d>" % (
            self.ok,
            self.counts["n_chunks"],
            self.counts["n_failed"],
        )


def _graph_text(graph, base_dir):
    """(text, source, base_dir) of a graph file, a dict or a Graph."""
    from ._graph import Graph

    if isinstance(graph, Graph):
        graph = graph.to_dict()
    if isinstance(graph, dict):
        try:
            text = json.dumps(graph, allow_nan=False)
        except (TypeError, ValueError) as e:
            raise TypeError("the graph dict is not JSON: %s" % e) from None
        return text, "<graph dict>", base_dir if base_dir is not None else os.getcwd()
    if isinstance(graph, (str, os.PathLike)):
        path = os.fspath(graph)
        with open(path, "rb") as f:
            data = f.read()
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as e:
            raise ValueError("%s: not UTF-8 text (byte %d)" % (path, e.start)) from None
        if base_dir is None:
            base_dir = os.path.dirname(os.path.abspath(path))
        return text, path, base_dir
    raise TypeError(
        "run: a graph file's path, a dict in the graph-file format or a sluice.Graph, not %s"
        % type(graph).__name__
    )


def _memory(memory):
    if memory is None:
        return 0
    if isinstance(memory, str):
        return _sluice.parse_size(memory)
    if isinstance(memory, bool) or not isinstance(memory, int):
        raise TypeError("memory: bytes (an int) or a size such as \"2G\"")
    if memory <= 0:
        raise ValueError("memory=%d: a budget in bytes, > 0" % memory)
    return memory


def run(
    graph,
    *,
    threads=None,
    memory=None,
    error_policy=None,
    missing=None,
    retries=None,
    allow_plugins=False,
    base_dir=None,
    check=False,
    functions=None,
):
    """Run a graph and return its Report.

    ``graph``: a graph file's path, a dict in the graph-file format
    (``examples/graphs/FORMAT.md``) or a ``sluice.Graph``.  Relative array
    paths are taken from the graph file's directory (a dict's from
    ``base_dir``, else the working directory).  Options override the
    file's ``"run"``: ``threads`` (a pool of its own; default: the module's
    pool, one worker per core), ``memory`` (the chunk-buffer budget: bytes
    or ``"2G"``), ``error_policy`` (``"collect"`` or ``"fail_fast"``),
    ``missing`` (``"fill"`` or ``"error"``: an input chunk not stored),
    ``retries`` (per chunk), ``allow_plugins`` (load the file's plugins),
    ``functions`` (a dict of the Python functions a graph file's ``map``
    nodes name by their ``"fn"``; a Graph brings those of its ``map``).

    Chunks that fail do not raise: the report holds them (``check=True``
    raises sluice.Error for the first).  A graph that cannot be loaded
    raises sluice.Error with ``errors``, every message the loader gave.
    """
    from ._graph import Graph

    fns = dict(graph._fns) if isinstance(graph, Graph) else {}
    if functions is not None:
        fns.update(functions)
    text, source, base = _graph_text(graph, base_dir)
    if threads is not None and (isinstance(threads, bool) or not isinstance(threads, int)):
        raise TypeError("threads: an int")
    if threads is not None and not 1 <= threads <= 4096:
        raise ValueError("threads=%d: 1 .. 4096" % threads)
    if error_policy not in _POLICY:
        raise ValueError('error_policy=%r: "collect" or "fail_fast"' % (error_policy,))
    if missing not in _MISSING:
        raise ValueError('missing=%r: "fill" or "error"' % (missing,))
    if retries is not None and (
        isinstance(retries, bool) or not isinstance(retries, int) or not 0 <= retries <= 100
    ):
        raise ValueError("retries=%r: an int, 0 .. 100" % (retries,))
    raw = _sluice.run_graph(
        text,
        source,
        base,
        bool(allow_plugins),
        threads or 0,
        _memory(memory),
        _POLICY[error_policy],
        _MISSING[missing],
        -1 if retries is None else retries,
        fns,
    )
    report = Report(raw)
    if check:
        report.raise_if_failed()
    return report


def _abs(path):
    path = os.fspath(path)
    return path if "://" in path else os.path.abspath(path)


def _source_entry(src, store_options):
    entry = {"path": _abs(src)}
    for k in ("endpoint", "region", "missing_on_403"):
        if store_options.get(k) is not None:
            entry[k] = store_options[k]
    return entry


def downsample(src, dst, factors, *, method="mean", create=None, overwrite=False,
               store_options=None, **run_options):
    """Downsample array ``src`` by ``factors`` into a new array ``dst``, as
    ``sluice downsample`` does: ``method`` is ``mean``, ``stride``, ``min``,
    ``max``, ``median`` or ``mode``; ``create`` a dict of the new array's
    settings (``chunks``, ``shards``, ``codec``, ``format``, ...); the other
    options as for ``run``.  Returns the Report (``check=True`` raises on a
    failed chunk)."""
    g = {
        "sluice": 1,
        "arrays": {
            "src": _source_entry(src, store_options or {}),
            "dst": {"path": _abs(dst), "like": "src", "overwrite": overwrite},
        },
        "nodes": {
            "read": {"op": "get", "array": "src"},
            "down": {"op": "downsample", "input": "read", "factors": list(factors),
                     "method": method},
            "write": {"op": "put", "input": "down", "array": "dst"},
        },
    }
    if create:
        g["arrays"]["dst"]["create"] = dict(create)
    return run(g, **run_options)


def pyramid(src, group, levels, factors, *, method=None, smooth="none", create=None,
            name=None, axes=None, scale=None, translation=None, omero=False,
            overwrite=False, store_options=None, **run_options):
    """Write an OME-Zarr multiscale pyramid of array ``src`` into a new
    group ``group``, as ``sluice pyramid`` does: ``levels`` levels (level 0
    the input), each ``factors`` smaller than the one before, reduced by
    ``method`` (default ``mean``; ``stride`` with ``smooth="gaussian"``).
    ``create``, ``name``, ``axes``, ``scale``, ``translation`` and
    ``omero`` are the pyramid node's fields (``examples/graphs/FORMAT.md``);
    the other options as for ``run``.  Returns the Report."""
    node = {"op": "pyramid", "input": "read", "group": _abs(group), "levels": levels,
            "factors": list(factors), "smooth": smooth, "overwrite": overwrite}
    for key, value in (("method", method), ("create", create), ("name", name),
                       ("axes", axes), ("scale", scale), ("translation", translation)):
        if value is not None:
            node[key] = value
    if omero:
        node["omero"] = omero
    g = {
        "sluice": 1,
        "arrays": {"src": _source_entry(src, store_options or {})},
        "nodes": {"read": {"op": "get", "array": "src"}, "levels": node},
    }
    return run(g, **run_options)
