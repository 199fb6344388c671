# SPDX-License-Identifier: MIT
"""A cache of decoded chunks for one Array (``sluice.open(..., cache=...)``).

Reads that fall within one chunk are served from the chunk decoded once
and kept, least recently used first out, within a byte budget.  Writes
through the same Array drop the chunks they touch; writes by anyone else
are not seen until the chunk leaves the cache (as zarr-python's
LRUStoreCache), so it is for data that does not change while it is read.
"""

import collections
import threading

from . import _sluice

__all__ = ["ChunkCache", "cache_bytes"]

DEFAULT_BYTES = 256 << 20


def cache_bytes(cache):
    """The budget that ``open``'s ``cache`` argument asks for: 0 for none."""
    if cache is None or cache is False:
        return 0
    if cache is True:
        return DEFAULT_BYTES
    if isinstance(cache, str):
        return _sluice.parse_size(cache)
    if isinstance(cache, int) and not isinstance(cache, bool):
        if cache < 0:
            raise ValueError("cache=%d: a budget in bytes, >= 0" % cache)
        return cache
    raise TypeError('cache: True, a number of bytes or a size such as "256M", not %r' % (cache,))


class ChunkCache:
    """Decoded chunks of one array by chunk index, within ``budget`` bytes."""

    def __init__(self, budget, shape, chunks):
        self.budget = budget
        self.shape = shape
        self.chunks = chunks
        self._lock = threading.Lock()
        self._chunks = collections.OrderedDict()
        self._bytes = 0
        self._generation = 0  # counts drops: a read that spans one is not kept
        self.hits = 0
        self.misses = 0

    def info(self):
        """A dict of budget, bytes, chunks, hits and misses."""
        with self._lock:
            return {"budget": self.budget, "bytes": self._bytes, "chunks": len(self._chunks),
                    "hits": self.hits, "misses": self.misses}

    def chunk_of(self, start, stop):
        """The index of the one chunk holding box [start, stop), or None."""
        key = []
        for a, b, c in zip(start, stop, self.chunks):
            k = a // c
            if (b - 1) // c != k:
                return None
            key.append(k)
        return tuple(key)

    def bounds(self, key):
        """The chunk's box, clipped at the array's edge."""
        start = tuple(k * c for k, c in zip(key, self.chunks))
        stop = tuple(min(a + c, n) for a, c, n in zip(start, self.chunks, self.shape))
        return start, stop

    def get(self, key, read):
        """The chunk `key`, from the cache or from ``read(start, stop)``."""
        with self._lock:
            block = self._chunks.get(key)
            if block is not None:
                self._chunks.move_to_end(key)
                self.hits += 1
                return block
            generation = self._generation
        start, stop = self.bounds(key)
        block = read(start, stop)  # outside the lock: other threads go on
        block.flags.writeable = False
        with self._lock:
            self.misses += 1
            # A write that dropped chunks meanwhile may have changed this
            # one after it was read: use it, but do not keep it.
            fresh = self._generation == generation
            if fresh and block.nbytes <= self.budget and key not in self._chunks:
                self._chunks[key] = block
                self._bytes += block.nbytes
                while self._bytes > self.budget:
                    _, old = self._chunks.popitem(last=False)
                    self._bytes -= old.nbytes
        return block

    def drop(self, start, stop):
        """Forget every chunk that box [start, stop) touches."""
        with self._lock:
            self._generation += 1
            for key in [k for k in self._chunks if self._meets(k, start, stop)]:
                self._bytes -= self._chunks.pop(key).nbytes

    def _meets(self, key, start, stop):
        for k, c, a, b in zip(key, self.chunks, start, stop):
            if k * c >= b or (k + 1) * c <= a:
                return False
        return True
