/* SPDX-License-Identifier: MIT */
/*
 * The machine's topology through hwloc, read once into flat arrays: for
 * every core its first PU, NUMA node, package and shared cache; for every
 * NUMA node its nodeset (for binding memory).  From these come the
 * placement plan of the workers and each worker's victim order.
 *
 * DESIGN
 * hwloc 2 hangs NUMA nodes off the tree as memory children, so a core's
 * node is read from its nodeset, not from an ancestor.  A core's shared
 * cache is the nearest data or unified cache above it that covers more than
 * one core.  Two cores "share a cache" for stealing only when they also
 * share a NUMA node (on Intel's sub-NUMA clustering an L3 spans nodes; the
 * memory behind a task matters more than the L3).  Models (synthetic or
 * XML) load like the host but are never used for binding.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hwloc.h>

#include "topo_internal.h"

/* Where a topology came from. */
enum topo_source { TOPO_HOST, TOPO_SYNTHETIC, TOPO_XML };

struct sl_topo {
    hwloc_topology_t hw;            /* hwloc's view */
    enum topo_source source;        /* host or model */
    bool this_system;               /* binding allowed */
    struct sl_topo_counts counts;   /* object counts */
    struct sl_topo_place *cores;    /* per core */
    hwloc_obj_t *core_objs;         /* per core: the hwloc object (cpuset) */
    hwloc_nodeset_t *numa_nodesets; /* per NUMA node */
};

static bool
ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* Point hwloc at the model `desc` describes, if any. */
static sl_status
topo_set_source(sl_topo *t, const char *desc, struct sl_error *err)
{
    int rc = 0;
    const char *what = "";
    if (desc == NULL || desc[0] == '\0') {
        t->source = TOPO_HOST;
        return SL_OK;
    }
    if (desc[0] == '<') {
        t->source = TOPO_XML;
        what = "XML document";
        rc = hwloc_topology_set_xmlbuffer(t->hw, desc, (int)strlen(desc) + 1);
    } else if (ends_with(desc, ".xml")) {
        t->source = TOPO_XML;
        what = "XML file";
        rc = hwloc_topology_set_xml(t->hw, desc);
    } else {
        t->source = TOPO_SYNTHETIC;
        what = "synthetic description";
        rc = hwloc_topology_set_synthetic(t->hw, desc);
    }
    if (rc != 0)
        return sl_error_set(err, SL_EINVAL, NULL, "hwloc rejects topology %s \"%.60s\"", what,
                            desc);
    return SL_OK;
}

/*
 * On this machine, keep only the processing units the process may run on
 * (taskset, a cgroup, mpirun's binding of each rank), so that workers are
 * placed and counted there; without this, every rank of an MPI job bound to
 * its own core would pin its workers to the machine's first cores.  hwloc
 * already hides what a cgroup forbids; the process's own binding it does
 * not.  A binding hwloc cannot read, or one covering every PU, is left be.
 */
static void
topo_restrict_to_binding(sl_topo *t)
{
    hwloc_bitmap_t set = hwloc_bitmap_alloc();
    if (set == NULL)
        return;
    hwloc_const_cpuset_t all = hwloc_topology_get_topology_cpuset(t->hw);
    if (hwloc_get_cpubind(t->hw, set, HWLOC_CPUBIND_PROCESS) == 0 && !hwloc_bitmap_iszero(set) &&
        hwloc_bitmap_intersects(set, all) && !hwloc_bitmap_isincluded(all, set))
        (void)hwloc_topology_restrict(t->hw, set, 0);
    hwloc_bitmap_free(set);
}

/* Nearest cache above `core` that more than one core shares, or NULL. */
static hwloc_obj_t
shared_cache_of(hwloc_topology_t hw, hwloc_obj_t core, hwloc_obj_type_t core_type)
{
    for (hwloc_obj_t o = core->parent; o != NULL; o = o->parent) {
        if (!hwloc_obj_type_is_dcache(o->type))
            continue;
        if (hwloc_get_nbobjs_inside_cpuset_by_type(hw, o->cpuset, core_type) > 1)
            return o;
    }
    return NULL;
}

/* Logical index of the first NUMA node in `nodeset`, 0 when none. */
static unsigned
numa_index_of(hwloc_topology_t hw, hwloc_const_nodeset_t nodeset)
{
    if (nodeset == NULL)
        return 0;
    int os = hwloc_bitmap_first(nodeset);
    if (os < 0)
        return 0;
    hwloc_obj_t node = hwloc_get_numanode_obj_by_os_index(hw, (unsigned)os);
    return node != NULL ? node->logical_index : 0;
}

/* Fill cores[i] for every core; `caches` collects distinct shared caches. */
static sl_status
topo_read_cores(sl_topo *t, hwloc_obj_type_t core_type, struct sl_error *err)
{
    unsigned n = t->counts.n_cores;
    hwloc_obj_t *caches = calloc(n, sizeof(*caches));
    if (caches == NULL)
        return sl_error_set(err, SL_ENOMEM, NULL, "topology: no memory for %u cores", n);
    unsigned n_caches = 0;
    for (unsigned i = 0; i < n; i++) {
        hwloc_obj_t core = hwloc_get_obj_by_type(t->hw, core_type, i);
        hwloc_obj_t pu =
            core_type == HWLOC_OBJ_PU
                ? core
                : hwloc_get_obj_inside_cpuset_by_type(t->hw, core->cpuset, HWLOC_OBJ_PU, 0);
        hwloc_obj_t pkg = hwloc_get_ancestor_obj_by_type(t->hw, HWLOC_OBJ_PACKAGE, core);
        hwloc_obj_t cache = shared_cache_of(t->hw, core, core_type);
        unsigned cache_id = SL_TOPO_NONE;
        if (cache != NULL) {
            for (unsigned c = 0; c < n_caches && cache_id == SL_TOPO_NONE; c++)
                if (caches[c] == cache)
                    cache_id = c;
            if (cache_id == SL_TOPO_NONE) {
                caches[n_caches] = cache;
                cache_id = n_caches++;
            }
        }
        t->core_objs[i] = core;
        t->cores[i] = (struct sl_topo_place){
            .core = i,
            .pu_os_index = pu != NULL ? pu->os_index : 0,
            .numa_node = numa_index_of(t->hw, core->nodeset),
            .package = pkg != NULL ? pkg->logical_index : 0,
            .cache = cache_id,
        };
    }
    t->counts.n_shared_caches = n_caches;
    free(caches);
    return SL_OK;
}

static sl_status
topo_read(sl_topo *t, struct sl_error *err)
{
    hwloc_obj_type_t core_type = HWLOC_OBJ_CORE;
    int n_cores = hwloc_get_nbobjs_by_type(t->hw, HWLOC_OBJ_CORE);
    int n_pus = hwloc_get_nbobjs_by_type(t->hw, HWLOC_OBJ_PU);
    if (n_pus <= 0)
        return sl_error_set(err, SL_EUNSUPPORTED, NULL, "topology has no processing units");
    if (n_cores <= 0) {
        /* Some systems and models have no core level: a PU is a core. */
        core_type = HWLOC_OBJ_PU;
        n_cores = n_pus;
    }
    int n_numa = hwloc_get_nbobjs_by_type(t->hw, HWLOC_OBJ_NUMANODE);
    int n_pkg = hwloc_get_nbobjs_by_type(t->hw, HWLOC_OBJ_PACKAGE);
    t->counts = (struct sl_topo_counts){
        .n_packages = n_pkg > 0 ? (unsigned)n_pkg : 1,
        .n_numa_nodes = n_numa > 0 ? (unsigned)n_numa : 1,
        .n_cores = (unsigned)n_cores,
        .n_pus = (unsigned)n_pus,
    };
    t->cores = calloc((size_t)n_cores, sizeof(*t->cores));
    t->core_objs = calloc((size_t)n_cores, sizeof(*t->core_objs));
    t->numa_nodesets = calloc(t->counts.n_numa_nodes, sizeof(*t->numa_nodesets));
    if (t->cores == NULL || t->core_objs == NULL || t->numa_nodesets == NULL)
        return sl_error_set(err, SL_ENOMEM, NULL, "topology: no memory for %d cores", n_cores);
    for (unsigned i = 0; i < t->counts.n_numa_nodes; i++) {
        hwloc_obj_t node = hwloc_get_obj_by_type(t->hw, HWLOC_OBJ_NUMANODE, i);
        t->numa_nodesets[i] = node != NULL ? hwloc_bitmap_dup(node->nodeset) : hwloc_bitmap_alloc();
        if (t->numa_nodesets[i] == NULL)
            return sl_error_set(err, SL_ENOMEM, NULL, "topology: no memory for nodesets");
    }
    return topo_read_cores(t, core_type, err);
}

sl_topo *
sl_topo_create(const char *desc, struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    sl_topo *t = calloc(1, sizeof(*t));
    if (t == NULL) {
        sl_error_set(err, SL_ENOMEM, NULL, "topology: no memory");
        return NULL;
    }
    if (hwloc_topology_init(&t->hw) != 0) {
        free(t);
        sl_error_set(err, SL_ENOMEM, NULL, "hwloc_topology_init failed");
        return NULL;
    }
    if (topo_set_source(t, desc, err) != SL_OK)
        goto out_destroy;
    if (hwloc_topology_load(t->hw) != 0) {
        sl_error_set(err, SL_EINVAL, NULL, "hwloc cannot load topology \"%.60s\"",
                     desc != NULL && desc[0] != '\0' ? desc : "(this machine)");
        goto out_destroy;
    }
    t->this_system = t->source == TOPO_HOST && hwloc_topology_is_thissystem(t->hw);
    if (t->this_system)
        topo_restrict_to_binding(t);
    if (topo_read(t, err) != SL_OK)
        goto out_destroy;
    return t;

out_destroy:
    sl_topo_destroy(t);
    return NULL;
}

void
sl_topo_destroy(sl_topo *topo)
{
    if (topo == NULL)
        return;
    if (topo->numa_nodesets != NULL)
        for (unsigned i = 0; i < topo->counts.n_numa_nodes; i++)
            hwloc_bitmap_free(topo->numa_nodesets[i]);
    free(topo->numa_nodesets);
    free(topo->core_objs);
    free(topo->cores);
    hwloc_topology_destroy(topo->hw);
    free(topo);
}

bool
sl_topo_is_this_system(const sl_topo *topo)
{
    return topo->this_system;
}

struct sl_topo_counts
sl_topo_counts(const sl_topo *topo)
{
    return topo->counts;
}

sl_status
sl_topo_core_place(const sl_topo *topo, unsigned core, struct sl_topo_place *out,
                   struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    if (core >= topo->counts.n_cores)
        return sl_error_set(err, SL_EINVAL, NULL, "core %u out of range: topology has %u cores",
                            core, topo->counts.n_cores);
    *out = topo->cores[core];
    return SL_OK;
}

static sl_topo_distance
place_distance(const struct sl_topo_place *a, const struct sl_topo_place *b)
{
    if (a->core == b->core)
        return SL_TOPO_SAME_CORE;
    if (a->numa_node != b->numa_node)
        return a->package == b->package ? SL_TOPO_SAME_PACKAGE : SL_TOPO_REMOTE;
    if (a->cache != SL_TOPO_NONE && a->cache == b->cache)
        return SL_TOPO_SAME_CACHE;
    return SL_TOPO_SAME_NUMA;
}

sl_topo_distance
sl_topo_core_distance(const sl_topo *topo, unsigned a, unsigned b)
{
    if (a >= topo->counts.n_cores || b >= topo->counts.n_cores)
        return SL_TOPO_REMOTE;
    return place_distance(&topo->cores[a], &topo->cores[b]);
}

/* Core order of SPREAD: the first core of each NUMA node, then the second
 * of each, and so on; within a round, cores in topology order. */
static sl_status
spread_order(const sl_topo *topo, unsigned *order, struct sl_error *err)
{
    unsigned n_nodes = topo->counts.n_numa_nodes, n_cores = topo->counts.n_cores;
    unsigned *seen = calloc(n_nodes, sizeof(*seen));
    unsigned *rank = calloc(n_cores, sizeof(*rank));
    if (seen == NULL || rank == NULL) {
        free(seen);
        free(rank);
        return sl_error_set(err, SL_ENOMEM, NULL, "plan: no memory for %u cores", n_cores);
    }
    for (unsigned c = 0; c < n_cores; c++) {
        unsigned node = topo->cores[c].numa_node < n_nodes ? topo->cores[c].numa_node : 0;
        rank[c] = seen[node]++;
    }
    /* Every rank is below n_cores, so this ends. */
    unsigned n = 0;
    for (unsigned r = 0; n < n_cores; r++)
        for (unsigned c = 0; c < n_cores; c++)
            if (rank[c] == r)
                order[n++] = c;
    free(seen);
    free(rank);
    return SL_OK;
}

sl_status
sl_topo_plan(const sl_topo *topo, unsigned n_workers, sl_pin pin, struct sl_topo_place *places,
             struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    if (n_workers == 0 || places == NULL)
        return sl_error_set(err, SL_EINVAL, NULL, "plan needs at least one worker and an array");
    unsigned n_cores = topo->counts.n_cores;
    switch (pin) {
    case SL_PIN_COMPACT:
    case SL_PIN_NONE:
        for (unsigned i = 0; i < n_workers; i++)
            places[i] = topo->cores[i % n_cores];
        return SL_OK;
    case SL_PIN_SPREAD: {
        unsigned *order = calloc(n_cores, sizeof(*order));
        if (order == NULL)
            return sl_error_set(err, SL_ENOMEM, NULL, "plan: no memory for %u cores", n_cores);
        sl_status st = spread_order(topo, order, err);
        for (unsigned i = 0; st == SL_OK && i < n_workers; i++)
            places[i] = topo->cores[order[i % n_cores]];
        free(order);
        return st;
    }
    }
    return sl_error_set(err, SL_EINVAL, NULL, "unknown pin policy %d", (int)pin);
}

sl_status
sl_topo_victims(const sl_topo *topo, const struct sl_topo_place *places, unsigned n_workers,
                unsigned thief, unsigned *victims, sl_topo_distance *distances,
                struct sl_error *err)
{
    sl_error_clear(err); /* each call reports its own errors */
    (void)topo;
    if (places == NULL || victims == NULL || thief >= n_workers)
        return sl_error_set(err, SL_EINVAL, NULL, "victims of worker %u of %u: bad arguments",
                            thief, n_workers);
    /* Counting sort by class keeps worker order within a class. */
    unsigned n = 0;
    for (int d = 0; d < SL_TOPO_DISTANCE_COUNT_; d++) {
        for (unsigned j = 0; j < n_workers; j++) {
            if (j == thief || place_distance(&places[thief], &places[j]) != (sl_topo_distance)d)
                continue;
            victims[n] = j;
            if (distances != NULL)
                distances[n] = (sl_topo_distance)d;
            n++;
        }
    }
    return SL_OK;
}

const char *
sl_topo_distance_name(sl_topo_distance d)
{
    switch (d) {
    case SL_TOPO_SAME_CORE:
        return "same-core";
    case SL_TOPO_SAME_CACHE:
        return "same-cache";
    case SL_TOPO_SAME_NUMA:
        return "same-numa";
    case SL_TOPO_SAME_PACKAGE:
        return "same-package";
    case SL_TOPO_REMOTE:
        return "remote";
    case SL_TOPO_DISTANCE_COUNT_:
        break;
    }
    return "unknown";
}

const char *
sl_pin_name(sl_pin pin)
{
    switch (pin) {
    case SL_PIN_COMPACT:
        return "compact";
    case SL_PIN_SPREAD:
        return "spread";
    case SL_PIN_NONE:
        return "none";
    }
    return "unknown";
}

size_t
sl_topo_describe(const sl_topo *topo, char *buf, size_t size)
{
    static const char *const source_names[] = {"this machine", "synthetic", "XML"};
    const struct sl_topo_counts *c = &topo->counts;
    int n =
        snprintf(buf, size, "%u packages, %u NUMA nodes, %u shared caches, %u cores, %u PUs (%s)",
                 c->n_packages, c->n_numa_nodes, c->n_shared_caches, c->n_cores, c->n_pus,
                 source_names[topo->source]);
    return n < 0 ? 0 : (size_t)n;
}

hwloc_topology_t
sl__topo_hwloc(const sl_topo *topo)
{
    return topo->hw;
}

hwloc_const_cpuset_t
sl__topo_core_cpuset(const sl_topo *topo, unsigned core)
{
    return topo->core_objs[core]->cpuset;
}

hwloc_const_nodeset_t
sl__topo_numa_nodeset(const sl_topo *topo, unsigned node)
{
    return topo->numa_nodesets[node];
}

unsigned
sl__topo_numa_of_os_pu(const sl_topo *topo, unsigned pu_os_index)
{
    hwloc_obj_t pu = hwloc_get_pu_obj_by_os_index(topo->hw, pu_os_index);
    return pu != NULL ? numa_index_of(topo->hw, pu->nodeset) : 0;
}
