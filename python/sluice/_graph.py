# SPDX-License-Identifier: MIT
"""``sluice.Graph``: graph files built from Python.

A Graph collects arrays and nodes and gives the dict of the graph-file
format (``examples/graphs/FORMAT.md``) that ``sluice.run`` runs, so every
node a graph file has is here, checked by the same loader, with the same
error messages.  Each method returns the new node's ``Node`` handle, which
other methods take as their input.
"""

import os

__all__ = ["Graph", "Node"]


class Node:
    """A node of a Graph: its id, to pass as another node's input."""

    __slots__ = ("graph", "id")

    def __init__(self, graph, node_id):
        self.graph = graph
        self.id = node_id

    def __repr__(self):
        return "<sluice.Node %s: %s>" % (self.id, self.graph._nodes[self.id]["op"])


def _path(path):
    path = os.fspath(path)
    return path if "://" in path else os.path.abspath(path)


class Graph:
    """A graph under construction.

    >>> g = sluice.Graph()
    >>> raw, dark = g.get("raw.zarr"), g.get("dark.zarr")
    >>> ff = g.expr("(r - d) / 2", r=raw, d=dark, dtype="float32")
    >>> g.put(ff, "out.zarr", create={"chunks": [64, 64]})
    >>> report = sluice.run(g)

    ``run`` (a dict) holds the graph's run options (``threads``,
    ``memory``, ``error_policy``, ``journal``, ...); ``plugins`` the plugin
    libraries its nodes use (run with ``allow_plugins=True``).
    """

    def __init__(self, run=None, plugins=None):
        self._arrays = {}
        self._nodes = {}
        self._count = {}
        self._fns = {}  # the functions of map nodes, by their "fn" name
        self.run = dict(run or {})
        self.plugins = list(plugins or [])

    # ---- plumbing ----------------------------------------------------

    def _name(self, prefix, name, taken):
        if name is not None:
            if not isinstance(name, str):
                raise TypeError("a node or array name: str, not %s" % type(name).__name__)
            if name in taken:
                raise ValueError("%r is taken in this graph" % name)
            return name
        while True:
            k = self._count.get(prefix, 0)
            self._count[prefix] = k + 1
            candidate = "%s%d" % (prefix, k)
            if candidate not in taken:
                return candidate

    def _ref(self, node):
        if isinstance(node, Node):
            if node.graph is not self:
                raise ValueError("node %s belongs to another Graph" % node.id)
            return node.id
        if isinstance(node, str) and node in self._nodes:
            return node
        raise TypeError("an input: a Node of this graph, not %r" % (node,))

    def add(self, op, input=None, *, name=None, **fields):
        """Add a node of kind ``op`` with the graph file's ``fields``:
        ``g.add("gaussian", x, sigma=[0, 1, 1])``.  ``input`` is one Node,
        or, for ``stack``/``concat``, pass ``inputs=[...]`` (a list of
        Nodes), for ``expr`` ``inputs={name: Node}``."""
        node = {"op": op}
        if input is not None:
            node["input"] = self._ref(input)
        if "inputs" in fields:
            inputs = fields.pop("inputs")
            if isinstance(inputs, dict):
                node["inputs"] = {k: self._ref(v) for k, v in inputs.items()}
            else:
                node["inputs"] = [self._ref(v) for v in inputs]
        node.update({k: v for k, v in fields.items() if v is not None})
        node_id = self._name(op, name, self._nodes)
        self._nodes[node_id] = node
        return Node(self, node_id)

    def array(self, path, *, name=None, create=None, like=None, overwrite=None, **store):
        """Declare an array (``path``: a local path or a URL) and return its
        name in ``"arrays"``; ``create``, ``like``, ``overwrite`` and the
        store fields (``endpoint``, ``region``, ``missing_on_403``) as the
        graph file's."""
        entry = {"path": _path(path)}
        if create is not None:
            entry["create"] = dict(create)
        if like is not None:
            entry["like"] = like
        if overwrite is not None:
            entry["overwrite"] = overwrite
        entry.update({k: v for k, v in store.items() if v is not None})
        key = self._name("a", name, self._arrays)
        self._arrays[key] = entry
        return key

    # ---- sources and sinks --------------------------------------------

    def get(self, path, *, name=None, **store):
        """Read an existing array: a ``get`` node."""
        return self.add("get", name=name, array=self.array(path, **store))

    def put(self, node, path, *, name=None, create=None, like=None, overwrite=None,
            existing=False, **store):
        """Write ``node`` into a new array at ``path``: without ``create``
        (a dict of the graph file's settings) or ``like`` (another array's
        name in the graph) it is made as the node's shape, dtype and chunks
        say.  ``overwrite=True`` replaces what is stored there when the
        run succeeds.  ``existing=True`` writes into the array already
        stored at ``path`` instead (its shape and dtype must match)."""
        if existing:
            if create is not None or like is not None:
                raise ValueError("put: existing=True writes an array as it is stored: "
                                 "no create or like")
            overwrite = True
        elif create is None and like is None:
            create = {}
        key = self.array(path, create=create, like=like, overwrite=overwrite, **store)
        return self.add("put", node, name=name, array=key)

    # ---- computing ----------------------------------------------------

    def expr(self, expression, *, dtype=None, compute=None, chunks=None, name=None, **inputs):
        """Arithmetic over up to 8 inputs, named by keyword:
        ``g.expr("(raw - dark) / max(flat, 1)", raw=r, dark=d, flat=f)``."""
        return self.add("expr", name=name, inputs=inputs, expr=expression, dtype=dtype,
                        compute=compute, chunks=chunks)

    def reduce(self, node, method, axes="all", *, keepdims=None, dtype=None, ddof=None,
               chunks=None, split_every=None, name=None):
        """A reduction (``sum``, ``mean``, ``max``, ``nanmean``, ...) along
        ``axes``, as numpy's."""
        return self.add("reduce", node, name=name, method=method, axes=axes, keepdims=keepdims,
                        dtype=dtype, ddof=ddof, chunks=chunks, split_every=split_every)

    def stats(self, node, *, per=None, histogram=None, percentiles=None, name=None):
        """Statistics of ``node``: the Report's ``stats[name]``."""
        return self.add("stats", node, name=name, per=per, histogram=histogram,
                        percentiles=percentiles)

    def stack(self, nodes, axis, *, name=None):
        """numpy's ``stack`` of nodes of one shape."""
        return self.add("stack", name=name, inputs=list(nodes), axis=axis)

    def concat(self, nodes, axis, *, name=None):
        """numpy's ``concatenate`` along ``axis``."""
        return self.add("concat", name=name, inputs=list(nodes), axis=axis)

    def select(self, node, region=None, *, regions=None, axis=None, name=None):
        """A region (``[[start, stop] or None, ...]``) of ``node``."""
        return self.add("select", node, name=name, region=region, regions=regions, axis=axis)

    def rechunk(self, node, chunks, *, name=None):
        """The same values in other chunks."""
        return self.add("rechunk", node, name=name, chunks=chunks)

    def downsample(self, node, factors, *, method=None, chunks=None, name=None):
        """Block reduction by ``factors`` (``mean``, ``stride``, ``min``, ...)."""
        return self.add("downsample", node, name=name, factors=list(factors), method=method,
                        chunks=chunks)

    def cast(self, node, dtype, *, name=None):
        """Conversion to ``dtype`` by the cast rules."""
        return self.add("cast", node, name=name, dtype=dtype)

    def squeeze(self, node, axes=None, *, name=None):
        """Drop axes of extent 1."""
        return self.add("squeeze", node, name=name, axes=axes)

    def expand_dims(self, node, axes, *, name=None):
        """New axes of extent 1."""
        return self.add("expand_dims", node, name=name, axes=axes)

    def transpose(self, node, axes, *, name=None):
        """numpy's ``transpose``."""
        return self.add("transpose", node, name=name, axes=axes)

    def map(self, fn, *inputs, dtype=None, name=None):
        """Call Python function ``fn(*blocks, where)`` per block.

        ``inputs``: 1 to 8 nodes sharing one chunk grid (rechunk first
        where they differ).  ``blocks`` are read-only numpy views of their
        blocks at one place (valid only during the call: copy what you
        keep); ``where`` a tuple of slices saying where the block lies.
        ``fn`` returns an array of the block's shape, converted to
        ``dtype`` (default: the first input's) as
        ``numpy.ndarray.astype`` converts.  An exception fails that chunk,
        its status message holding the function's name and the exception's
        type and text; the other chunks go on.

        The calls run on sluice's workers, each holding the GIL while it
        runs, so Python functions run one at a time (numpy code inside
        them that releases the GIL runs alongside), while reads, decodes
        and writes of other chunks go on in parallel.
        """
        if not callable(fn):
            raise TypeError("map: a function, not %s" % type(fn).__name__)
        if not inputs:
            raise TypeError("map: fn and at least one input node")
        base = getattr(fn, "__name__", "fn")
        base = "".join(c if c.isalnum() or c == "_" else "_" for c in base)[:40] or "fn"
        key = base
        k = 1
        while key in self._fns:
            key = "%s_%d" % (base, k)
            k += 1
        self._fns[key] = fn
        return self.add("map", name=name, inputs=list(inputs), fn=key, dtype=dtype)

    def pyramid(self, node, group, levels, factors, *, name=None, **fields):
        """An OME-Zarr pyramid of ``node`` written into a new group."""
        return self.add("pyramid", node, name=name, group=_path(group), levels=levels,
                        factors=list(factors), **fields)

    # ---- the document -------------------------------------------------

    def to_dict(self):
        """The graph-file dict (a new one each call)."""
        out = {"sluice": 1, "arrays": {k: dict(v) for k, v in self._arrays.items()},
               "nodes": {k: dict(v) for k, v in self._nodes.items()}}
        if self.run:
            out["run"] = dict(self.run)
        if self.plugins:
            out["plugins"] = list(self.plugins)
        return out

    def __repr__(self):
        return "<sluice.Graph %d arrays, %d nodes>" % (len(self._arrays), len(self._nodes))
