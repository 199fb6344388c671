/* SPDX-License-Identifier: MIT */
/*
 * Private declarations of the runtime's topology (topo.c): the hwloc
 * objects behind an sl_topo.  Open to the runtime's tests.
 */
#ifndef SL_TOPO_INTERNAL_H
#define SL_TOPO_INTERNAL_H

#include <hwloc.h>

#include <sluice/topo.h>

/* ---- topology internals (topo.c) --------------------------------------- */

hwloc_topology_t sl__topo_hwloc(const sl_topo *topo);
hwloc_const_cpuset_t sl__topo_core_cpuset(const sl_topo *topo, unsigned core);
hwloc_const_nodeset_t sl__topo_numa_nodeset(const sl_topo *topo, unsigned node);
unsigned sl__topo_numa_of_os_pu(const sl_topo *topo, unsigned pu_os_index);

#endif /* SL_TOPO_INTERNAL_H */
