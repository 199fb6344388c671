/* SPDX-License-Identifier: MIT */
/*
 * The sluice public API: include this one header.  It includes every module
 * header and declares nothing itself.
 */
#ifndef SL_SLUICE_H
#define SL_SLUICE_H

#include <sluice/alloc.h>
#include <sluice/array.h>
#include <sluice/array_io.h>
#include <sluice/array_iter.h>
#include <sluice/batch.h>
#include <sluice/block.h>
#include <sluice/buf.h>
#include <sluice/checked.h>
#include <sluice/codec.h>
#include <sluice/common.h>
#include <sluice/dtype.h>
#include <sluice/error.h>
#include <sluice/expr.h>
#include <sluice/filter.h>
#include <sluice/fs.h>
#include <sluice/graph.h>
#include <sluice/graph_json.h>
#include <sluice/graph_node.h>
#include <sluice/grid.h>
#include <sluice/journal.h>
#include <sluice/md5.h>
#include <sluice/ome.h>
#include <sluice/op_registry.h>
#include <sluice/ops.h>
#include <sluice/parallel.h>
#include <sluice/plan.h>
#include <sluice/plugin.h>
#include <sluice/pool.h>
#include <sluice/pyramid.h>
#include <sluice/reduce.h>
#include <sluice/region.h>
#include <sluice/remote.h>
#include <sluice/sha256.h>
#include <sluice/stats.h>
#include <sluice/status.h>
#include <sluice/store.h>
#include <sluice/task.h>
#include <sluice/topo.h>
#include <sluice/txn.h>
#include <sluice/version.h>
#include <sluice/view.h>

#endif /* SL_SLUICE_H */
