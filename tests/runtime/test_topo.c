/* SPDX-License-Identifier: MIT */
/*
 * Topology tests on synthetic machines (hwloc's synthetic descriptions and
 * XML), so that NUMA logic is tested on any host: object counts, where each
 * core sits, distance classes, the placement plan of each pin policy, the
 * victim order (own cache, then own node, then the rest of the package,
 * then the other package), and what a pool built on a model reports.
 */
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include <hwloc.h>

#include <sluice/pool.h>

#include "plain_test.h"
#include "topo_internal.h"

TestSuite(runtime_topo, .timeout = 20.0);

/* 2 packages x 2 NUMA nodes x 4 cores x 2 PUs; no caches. */
#define TWO_BY_TWO "pack:2 numa:2 core:4 pu:2"
/* As above with an L3 shared by each pair of cores. */
#define TWO_BY_TWO_L3 "pack:2 numa:2 l3:2 core:2 pu:2"

static sl_topo *
topo_make(const char *desc)
{
    struct sl_error err = SL_ERROR_INIT;
    sl_topo *t = sl_topo_create(desc, &err);
    cr_assert_not_null(t, "%s: %s", desc, err.text);
    return t;
}

Test(runtime_topo, synthetic_two_sockets_two_nodes_each)
{
    sl_topo *t = topo_make(TWO_BY_TWO);
    struct sl_topo_counts c = sl_topo_counts(t);
    cr_assert_eq(c.n_packages, 2);
    cr_assert_eq(c.n_numa_nodes, 4);
    cr_assert_eq(c.n_cores, 16);
    cr_assert_eq(c.n_pus, 32);
    cr_assert_eq(c.n_shared_caches, 0);
    cr_assert_not(sl_topo_is_this_system(t), "a model never allows binding");
    for (unsigned core = 0; core < 16; core++) {
        struct sl_topo_place p;
        cr_assert_eq(sl_topo_core_place(t, core, &p, NULL), SL_OK);
        cr_assert_eq(p.core, core);
        cr_assert_eq(p.numa_node, core / 4, "core %u", core);
        cr_assert_eq(p.package, core / 8, "core %u", core);
        cr_assert_eq(p.pu_os_index, 2 * core);
        cr_assert_eq(p.cache, SL_TOPO_NONE);
    }
    struct sl_topo_place p;
    struct sl_error err = SL_ERROR_INIT;
    cr_assert_eq(sl_topo_core_place(t, 16, &p, &err), SL_EINVAL);
    cr_assert_not_null(strstr(err.text, "core 16 out of range: topology has 16 cores"), "%s",
                       err.text);
    char line[160];
    sl_topo_describe(t, line, sizeof(line));
    cr_assert_not_null(strstr(line, "2 packages, 4 NUMA nodes"), "%s", line);
    cr_assert_not_null(strstr(line, "synthetic"), "%s", line);
    sl_topo_destroy(t);
}

Test(runtime_topo, shared_caches_and_distance_classes)
{
    sl_topo *t = topo_make(TWO_BY_TWO_L3);
    struct sl_topo_counts c = sl_topo_counts(t);
    cr_assert_eq(c.n_cores, 16);
    cr_assert_eq(c.n_shared_caches, 8);
    struct sl_topo_place p0, p1;
    cr_assert_eq(sl_topo_core_place(t, 0, &p0, NULL), SL_OK);
    cr_assert_eq(sl_topo_core_place(t, 1, &p1, NULL), SL_OK);
    cr_assert_neq(p0.cache, SL_TOPO_NONE);
    cr_assert_eq(p0.cache, p1.cache);
    cr_assert_eq(sl_topo_core_distance(t, 0, 0), SL_TOPO_SAME_CORE);
    cr_assert_eq(sl_topo_core_distance(t, 0, 1), SL_TOPO_SAME_CACHE);
    cr_assert_eq(sl_topo_core_distance(t, 0, 2), SL_TOPO_SAME_NUMA);
    cr_assert_eq(sl_topo_core_distance(t, 0, 3), SL_TOPO_SAME_NUMA);
    cr_assert_eq(sl_topo_core_distance(t, 0, 4), SL_TOPO_SAME_PACKAGE);
    cr_assert_eq(sl_topo_core_distance(t, 0, 7), SL_TOPO_SAME_PACKAGE);
    cr_assert_eq(sl_topo_core_distance(t, 0, 8), SL_TOPO_REMOTE);
    cr_assert_eq(sl_topo_core_distance(t, 15, 0), SL_TOPO_REMOTE);
    cr_assert_eq(sl_topo_core_distance(t, 0, 99), SL_TOPO_REMOTE);
    cr_assert_eq(strcmp(sl_topo_distance_name(SL_TOPO_SAME_NUMA), "same-numa"), 0);
    sl_topo_destroy(t);
}

Test(runtime_topo, compact_plan_fills_cores_in_order)
{
    sl_topo *t = topo_make(TWO_BY_TWO);
    struct sl_topo_place places[20];
    cr_assert_eq(sl_topo_plan(t, 20, SL_PIN_COMPACT, places, NULL), SL_OK);
    for (unsigned i = 0; i < 20; i++) {
        cr_assert_eq(places[i].core, i % 16, "worker %u", i);
        cr_assert_eq(places[i].numa_node, (i % 16) / 4);
    }
    cr_assert_eq(sl_topo_plan(t, 0, SL_PIN_COMPACT, places, NULL), SL_EINVAL);
    cr_assert_eq(sl_topo_plan(t, 2, (sl_pin)7, places, NULL), SL_EINVAL);
    sl_topo_destroy(t);
}

Test(runtime_topo, spread_plan_deals_workers_across_nodes)
{
    sl_topo *t = topo_make(TWO_BY_TWO);
    struct sl_topo_place places[16];
    cr_assert_eq(sl_topo_plan(t, 16, SL_PIN_SPREAD, places, NULL), SL_OK);
    /* The first four workers take the first core of each node... */
    for (unsigned i = 0; i < 4; i++) {
        cr_assert_eq(places[i].numa_node, i, "worker %u", i);
        cr_assert_eq(places[i].core, 4 * i);
    }
    /* ...the next four the second core of each, and every core is used once. */
    for (unsigned i = 4; i < 8; i++)
        cr_assert_eq(places[i].core, 4 * (i - 4) + 1);
    unsigned used = 0;
    for (unsigned i = 0; i < 16; i++)
        used |= 1u << places[i].core;
    cr_assert_eq(used, 0xffffu);
    sl_topo_destroy(t);
}

Test(runtime_topo, victims_nearest_first_own_node_before_remote)
{
    sl_topo *t = topo_make(TWO_BY_TWO_L3);
    struct sl_topo_place places[16];
    cr_assert_eq(sl_topo_plan(t, 16, SL_PIN_COMPACT, places, NULL), SL_OK);
    for (unsigned thief = 0; thief < 16; thief++) {
        unsigned victims[15];
        sl_topo_distance dist[15];
        cr_assert_eq(sl_topo_victims(t, places, 16, thief, victims, dist, NULL), SL_OK);
        unsigned seen = 1u << thief;
        for (unsigned i = 0; i < 15; i++) {
            unsigned v = victims[i];
            cr_assert_neq(v, thief);
            seen |= 1u << v;
            cr_assert_eq(dist[i], sl_topo_core_distance(t, thief, v));
            if (i > 0)
                cr_assert_geq(dist[i], dist[i - 1], "thief %u: classes out of order", thief);
            /* Class by position: 1 in the cache, 2 more on the node, 4 more
             * in the package, then the 8 of the other package. */
            sl_topo_distance want = i < 1   ? SL_TOPO_SAME_CACHE
                                    : i < 3 ? SL_TOPO_SAME_NUMA
                                    : i < 7 ? SL_TOPO_SAME_PACKAGE
                                            : SL_TOPO_REMOTE;
            cr_assert_eq(dist[i], want, "thief %u victim %u (#%u)", thief, v, i);
            bool own_node = places[v].numa_node == places[thief].numa_node;
            cr_assert_eq(own_node, i < 3, "thief %u: own node's workers come first", thief);
        }
        cr_assert_eq(seen, 0xffffu, "thief %u: every other worker once", thief);
    }
    unsigned victims[15];
    cr_assert_eq(sl_topo_victims(t, places, 16, 16, victims, NULL, NULL), SL_EINVAL);
    sl_topo_destroy(t);
}

Test(runtime_topo, more_workers_than_cores_share_cores_first)
{
    sl_topo *t = topo_make(TWO_BY_TWO);
    struct sl_topo_place places[32];
    cr_assert_eq(sl_topo_plan(t, 32, SL_PIN_COMPACT, places, NULL), SL_OK);
    unsigned victims[31];
    sl_topo_distance dist[31];
    cr_assert_eq(sl_topo_victims(t, places, 32, 5, victims, dist, NULL), SL_OK);
    cr_assert_eq(victims[0], 21, "worker 21 shares core 5 with worker 5");
    cr_assert_eq(dist[0], SL_TOPO_SAME_CORE);
    cr_assert_eq(dist[1], SL_TOPO_SAME_NUMA);
    sl_topo_destroy(t);
}

Test(runtime_topo, xml_export_loads_back_the_same_machine)
{
    hwloc_topology_t hw;
    cr_assert_eq(hwloc_topology_init(&hw), 0);
    cr_assert_eq(hwloc_topology_set_synthetic(hw, TWO_BY_TWO_L3), 0);
    cr_assert_eq(hwloc_topology_load(hw), 0);
    char *xml = NULL;
    int len = 0;
    cr_assert_eq(hwloc_topology_export_xmlbuffer(hw, &xml, &len, 0), 0);
    sl_topo *t = topo_make(xml);
    struct sl_topo_counts c = sl_topo_counts(t);
    cr_assert_eq(c.n_packages, 2);
    cr_assert_eq(c.n_numa_nodes, 4);
    cr_assert_eq(c.n_cores, 16);
    cr_assert_eq(c.n_shared_caches, 8);
    cr_assert_not(sl_topo_is_this_system(t));
    cr_assert_eq(sl_topo_core_distance(t, 0, 1), SL_TOPO_SAME_CACHE);
    sl_topo_destroy(t);
    hwloc_free_xmlbuffer(hw, xml);
    hwloc_topology_destroy(hw);
}

Test(runtime_topo, bad_descriptions_are_refused_with_a_message)
{
    static const char *const bad[] = {"pack:2 bogus:3", "core:0", "pu:", "missing-file.xml",
                                      "<not xml"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct sl_error err = SL_ERROR_INIT;
        cr_assert_null(sl_topo_create(bad[i], &err), "%s", bad[i]);
        cr_assert_eq(err.code, SL_EINVAL, "%s", bad[i]);
        cr_assert_not_null(strstr(err.text, "topology"), "%s: %s", bad[i], err.text);
    }
}

Test(runtime_topo, this_machine_loads)
{
    sl_topo *t = topo_make(NULL);
    struct sl_topo_counts c = sl_topo_counts(t);
    cr_assert_geq(c.n_cores, 1);
    cr_assert_geq(c.n_pus, c.n_cores);
    cr_assert_geq(c.n_numa_nodes, 1);
    cr_assert(sl_topo_is_this_system(t));
    sl_topo_destroy(t);
    sl_topo_destroy(NULL);
}

Test(runtime_topo, pool_on_a_model_plans_but_does_not_pin)
{
    struct sl_pool_opts o = SL_POOL_OPTS_DEFAULT;
    o.topology = TWO_BY_TWO_L3;
    o.pin = SL_PIN_SPREAD;
    struct sl_error err = SL_ERROR_INIT;
    sl_pool *pool = sl_pool_create(&o, &err);
    cr_assert_not_null(pool, "%s", err.text);
    cr_assert_eq(sl_pool_worker_count(pool), 16, "one worker per core of the model");
    struct sl_topo_place plan[16];
    cr_assert_eq(sl_topo_plan(sl_pool_topo(pool), 16, SL_PIN_SPREAD, plan, NULL), SL_OK);
    for (unsigned w = 0; w < 16; w++) {
        struct sl_pool_worker_info info;
        cr_assert_eq(sl_pool_worker_info(pool, w, &info, NULL), SL_OK);
        cr_assert_eq(info.place.core, plan[w].core, "worker %u", w);
        cr_assert_eq(info.place.numa_node, plan[w].numa_node);
        cr_assert_not(info.pinned, "worker %u pinned to a core of a model", w);
        cr_assert_eq(info.n_victims, 15);
        unsigned victims[15], expect[15];
        sl_topo_distance dist[15], expect_dist[15];
        cr_assert_eq(sl_pool_victims(pool, w, victims, dist, 15), 15);
        cr_assert_eq(sl_topo_victims(sl_pool_topo(pool), plan, 16, w, expect, expect_dist, NULL),
                     SL_OK);
        for (unsigned i = 0; i < 15; i++) {
            cr_assert_eq(victims[i], expect[i]);
            cr_assert_eq(dist[i], expect_dist[i]);
        }
    }
    cr_assert_eq(sl_pool_victims(pool, 16, NULL, NULL, 0), 0);
    struct sl_pool_worker_info info;
    struct sl_error range_err = SL_ERROR_INIT;
    cr_assert_eq(sl_pool_worker_info(pool, 16, &info, &range_err), SL_EINVAL);
    cr_assert_not_null(strstr(range_err.text, "worker 16 out of range (16 workers)"));
    sl_pool_destroy(pool);
}

Test(runtime_topo, pool_on_this_machine_pins_its_workers)
{
    sl_topo *t = topo_make(NULL);
    hwloc_topology_t hw = sl__topo_hwloc(t);
    bool can_bind = hwloc_topology_get_support(hw)->cpubind->set_thread_cpubind;
    sl_topo_destroy(t);
    if (!can_bind)
        cr_skip_test("hwloc cannot bind threads on this system");
    struct sl_pool_opts o = SL_POOL_OPTS_DEFAULT;
    o.n_workers = 2;
    sl_pool *pool = sl_pool_create(&o, NULL);
    cr_assert_not_null(pool);
    for (unsigned w = 0; w < 2; w++) {
        struct sl_pool_worker_info info;
        cr_assert_eq(sl_pool_worker_info(pool, w, &info, NULL), SL_OK);
        cr_assert(info.pinned, "worker %u on core %u not pinned", w, info.place.core);
    }
    sl_pool_destroy(pool);

    o.pin = SL_PIN_NONE;
    pool = sl_pool_create(&o, NULL);
    cr_assert_not_null(pool);
    struct sl_pool_worker_info info;
    cr_assert_eq(sl_pool_worker_info(pool, 0, &info, NULL), SL_OK);
    cr_assert_not(info.pinned, "SL_PIN_NONE binds nothing");
    sl_pool_destroy(pool);
}

/* A process bound to one CPU (taskset, a rank of mpirun) sees one core, and
 * its pool puts its workers there rather than on the machine's first core. */
Test(runtime_topo, a_process_bound_to_one_cpu_sees_and_uses_only_that_cpu)
{
    cpu_set_t all;
    cr_assert_eq(sched_getaffinity(0, sizeof(all), &all), 0);
    if (CPU_COUNT(&all) < 2)
        cr_skip_test("needs two CPUs to bind to the second");
    int last = -1;
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &all))
            last = c;
    /* Every thread of this test's own process, as taskset and mpirun bind. */
    hwloc_topology_t hw;
    cr_assert_eq(hwloc_topology_init(&hw), 0);
    cr_assert_eq(hwloc_topology_load(hw), 0);
    hwloc_bitmap_t set = hwloc_bitmap_alloc();
    hwloc_bitmap_only(set, (unsigned)last);
    if (hwloc_set_cpubind(hw, set, HWLOC_CPUBIND_PROCESS) != 0)
        cr_skip_test("cannot bind this process to CPU %d", last);
    sl_topo *t = topo_make(NULL);
    struct sl_topo_counts c = sl_topo_counts(t);
    cr_assert_eq(c.n_pus, 1, "bound to CPU %d, the topology has %u PUs", last, c.n_pus);
    struct sl_topo_place place;
    cr_assert_eq(sl_topo_core_place(t, 0, &place, NULL), SL_OK);
    cr_assert_eq(place.pu_os_index, (unsigned)last);
    sl_topo_destroy(t);

    struct sl_pool_opts o = SL_POOL_OPTS_DEFAULT; /* one worker per core: one */
    sl_pool *pool = sl_pool_create(&o, NULL);
    cr_assert_not_null(pool);
    cr_assert_eq(sl_pool_worker_count(pool), 1);
    struct sl_pool_worker_info info;
    cr_assert_eq(sl_pool_worker_info(pool, 0, &info, NULL), SL_OK);
    cr_assert_eq(info.place.pu_os_index, (unsigned)last);
    sl_pool_destroy(pool);
    hwloc_bitmap_free(set);
    hwloc_topology_destroy(hw);
}
