# SPDX-License-Identifier: MIT
"""Python selections as the regions sluice reads.

A selection is what ``a[...]`` takes: integers (negative ones count from
the end), slices with any step, ``...`` and ``None`` (a new axis of extent
1), one per dimension at most.  ``region(sel, shape)`` returns the smallest
box ``[start, stop)`` holding every element selected, and the index that
picks them out of that box once it is read; numpy does that last step
(a view, no copy).
"""

import operator

__all__ = ["Selection", "region"]


class Selection:
    """A selection resolved against a shape.

    ``start``, ``stop``: the box read or written, per array dimension.
    ``index``: applied to the box (as a numpy array of its shape) it gives
    the selection's result.  ``shape``: the result's shape.  ``empty``:
    nothing is selected (the box may be empty too).  ``dense``: the box is
    the selection itself (every step 1), so a write needs no read first.
    """

    __slots__ = ("start", "stop", "index", "shape", "empty", "dense")

    def __init__(self, start, stop, index, shape, dense):
        self.start = start
        self.stop = stop
        self.index = index
        self.shape = shape
        self.empty = any(n == 0 for n in shape) or any(
            b == a for a, b in zip(start, stop)
        )
        self.dense = dense

    def __repr__(self):
        return "Selection(start=%r, stop=%r, index=%r)" % (self.start, self.stop, self.index)


def _describe(item):
    name = type(item).__name__
    return "%s %r" % (name, item) if len(repr(item)) < 60 else name


def _integer(item):
    """The int an index stands for, or None when it is no integer."""
    if isinstance(item, bool):
        return None
    try:
        return operator.index(item)
    except TypeError:
        return None


def _expand(sel, rank):
    """``sel`` as a tuple with ``...`` replaced by full slices."""
    if not isinstance(sel, tuple):
        sel = (sel,)
    n_ellipsis = sum(1 for s in sel if s is Ellipsis)
    if n_ellipsis > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    used = sum(1 for s in sel if s is not None and s is not Ellipsis)
    if used > rank:
        raise IndexError(
            "too many indices: the array has %d dimension%s, %d were indexed"
            % (rank, "" if rank == 1 else "s", used)
        )
    out = []
    for s in sel:
        if s is Ellipsis:
            out.extend([slice(None)] * (rank - used))
        else:
            out.append(s)
    if n_ellipsis == 0:
        out.extend([slice(None)] * (rank - used))
    return out


def _slice_box(s, n):
    """(start, stop, index, count) of slice ``s`` over extent ``n``."""
    for part in (s.start, s.stop, s.step):
        if part is not None and _integer(part) is None:
            raise TypeError(
                "slice indices must be integers or None, not %s" % type(part).__name__
            )
    start, stop, step = s.indices(n)
    r = range(start, stop, step)
    count = len(r)
    if count == 0:
        lo = min(max(start, 0), n)
        return lo, lo, slice(None), 0
    lo, hi = (r[0], r[-1] + 1) if step > 0 else (r[-1], r[0] + 1)
    index = slice(None) if step == 1 else slice(None, None, step)
    return lo, hi, index, count


def region(sel, shape):
    """Resolve selection ``sel`` against ``shape``; a ``Selection``.

    Raises IndexError for an integer outside its dimension or too many
    indices, TypeError for what sluice does not take (lists, arrays and
    booleans: no fancy or mask indexing; strings; floats).
    """
    rank = len(shape)
    items = _expand(sel, rank)
    start, stop, index, out_shape = [], [], [], []
    dense = True
    dim = 0
    for item in items:
        if item is None:
            index.append(None)
            out_shape.append(1)
            continue
        n = shape[dim]
        i = _integer(item)
        if i is not None:
            if i < -n or i >= n:
                raise IndexError(
                    "index %d is out of bounds for dimension %d of extent %d" % (i, dim, n)
                )
            i = i + n if i < 0 else i
            start.append(i)
            stop.append(i + 1)
            index.append(0)
        elif isinstance(item, slice):
            lo, hi, idx, count = _slice_box(item, n)
            start.append(lo)
            stop.append(hi)
            index.append(idx)
            out_shape.append(count)
            dense = dense and idx == slice(None)
        else:
            raise TypeError(
                "sluice selects with integers, slices, '...' and None; got %s in dimension %d"
                " (fancy and boolean indexing are not supported: read a slice and index"
                " the numpy array)" % (_describe(item), dim)
            )
        dim += 1
    if any(s is Ellipsis for s in (sel if isinstance(sel, tuple) else (sel,))):
        # numpy's rule: with '...' the result is an array, 0-d too, never a
        # scalar; a trailing '...' in the index keeps that.
        index.append(Ellipsis)
    return Selection(tuple(start), tuple(stop), tuple(index), tuple(out_shape), dense)
