# SPDX-License-Identifier: MIT
"""sluice from Python: Zarr arrays as numpy, batched reads, and graphs.

    import sluice
    a = sluice.open("raw.zarr")            # an Array (or a Group)
    block = a[0, 100:200, ::2]             # a numpy array
    parts = a.read_many([np.s_[0:10], np.s_[500:510]])  # one batched read
    out = sluice.create("out.zarr", shape=a.shape, chunks=a.chunks, dtype=a.dtype)
    out[...] = block_or_scalar
    report = sluice.run("pipeline.json")   # a graph file, a dict or a Graph

Reads, decodes and writes run on sluice's worker pool with the GIL
released; failures raise ``sluice.Error``, whose ``code`` is sluice's
status name ("EIO", "ECORRUPT", ...) and whose ``message``, ``source``,
``chunk``, ``pointer``, ``line`` and ``column`` say what failed and where.
"""

from ._sluice import Error, parse_size, status_name, version
from ._array import Array, Group, create, open
from ._graph import Graph, Node
from ._run import Report, downsample, pyramid, run

__version__ = version

__all__ = [
    "Array",
    "Error",
    "Graph",
    "Group",
    "Node",
    "Report",
    "create",
    "downsample",
    "open",
    "parse_size",
    "pyramid",
    "run",
    "status_name",
    "version",
]
