/* SPDX-License-Identifier: MIT */
/*
 * Runs across processes with MPI (the `mpi` feature).  Every rank runs its
 * part of the graph; between phases the ranks meet at a barrier; progress
 * flows to rank 0 in small non-blocking messages; after the run the status
 * arrays are combined with a reduction that keeps, per chunk, the code of
 * the rank that ran it, and the failure records and summaries are gathered
 * to rank 0.
 *
 * DESIGN: only the thread that runs the plan (the main thread) calls MPI
 * (MPI_THREAD_FUNNELED); progress and phase callbacks run on it.  Progress
 * messages are point-to-point and drained opportunistically, never
 * collective, so ranks at different points of their run never wait for
 * each other there.  A rank that dies makes mpirun end every rank (MPI's
 * default error handling), so nothing hangs on it.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dist.h"

#define TAG_PROGRESS 17

/* What a rank tells rank 0 about its progress. */
struct dist_progress_msg {
    uint64_t chunks_done, chunks_total, chunks_failed, bytes_done, bytes_total;
    uint64_t final; /* 1 in the rank's last message */
};

static bool active; /* running under mpirun with MPI initialized */
static int my_rank, n_ranks = 1;
static sl_progress_fn *show_fn; /* rank 0's display */
static void *show_ctx;
static struct dist_progress_msg *latest;  /* rank 0: each rank's last message */
static struct dist_progress_msg outgoing; /* other ranks: the message in flight */
static MPI_Request out_req = MPI_REQUEST_NULL;
static double t0;
static bool gathered;    /* dist_gather completed: every rank took part */
static sl_plan *running; /* the plan the phase barrier merges codes into */

static double
now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void
dist_init(int *argc, char ***argv)
{
    if (getenv("OMPI_COMM_WORLD_SIZE") == NULL && getenv("PMI_SIZE") == NULL &&
        getenv("PMIX_RANK") == NULL)
        return;
    int provided;
    if (MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS)
        return;
    active = true;
    MPI_Comm_rank(MPI_COMM_WORLD, &my_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n_ranks);
    latest = calloc((size_t)n_ranks, sizeof(*latest));
    t0 = now_s();
}

void
dist_finish(int rc)
{
    if (!active)
        return;
    if (rc != 0 && !gathered && n_ranks > 1) {
        fprintf(stderr,
                "sluice: rank %d of %d failed before the run could finish; ending "
                "every rank\n",
                my_rank, n_ranks);
        MPI_Abort(MPI_COMM_WORLD, rc);
    }
    if (out_req != MPI_REQUEST_NULL)
        MPI_Wait(&out_req, MPI_STATUS_IGNORE);
    free(latest);
    MPI_Finalize();
}

int
dist_rank(void)
{
    return my_rank;
}

int
dist_size(void)
{
    return n_ranks;
}

/* Rank 0: take every progress message waiting. */
static void
drain_progress(void)
{
    int flag = 1;
    while (flag) {
        MPI_Status st;
        MPI_Iprobe(MPI_ANY_SOURCE, TAG_PROGRESS, MPI_COMM_WORLD, &flag, &st);
        if (!flag)
            break;
        struct dist_progress_msg m;
        MPI_Recv(&m, sizeof(m), MPI_BYTE, st.MPI_SOURCE, TAG_PROGRESS, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
        latest[st.MPI_SOURCE] = m;
    }
}

/* Rank 0: draw the sum of every rank's latest progress. */
static bool
show_total(bool final_here)
{
    struct sl_progress p = {.elapsed_s = now_s() - t0};
    bool all_final = true;
    for (int r = 0; r < n_ranks; r++) {
        p.chunks_done += latest[r].chunks_done;
        p.chunks_total += latest[r].chunks_total;
        p.chunks_failed += latest[r].chunks_failed;
        p.bytes_done += latest[r].bytes_done;
        p.bytes_total += latest[r].bytes_total;
        all_final &= latest[r].final != 0;
    }
    p.bytes_per_s = p.elapsed_s > 0 ? (double)p.bytes_done / p.elapsed_s : 0;
    p.eta_s = p.bytes_per_s > 0 ? (double)(p.bytes_total - p.bytes_done) / p.bytes_per_s : -1;
    p.final = all_final && final_here;
    if (show_fn != NULL)
        show_fn(show_ctx, &p);
    return all_final;
}

static void
on_progress(void *ctx, const struct sl_progress *p)
{
    (void)ctx;
    struct dist_progress_msg m = {p->chunks_done, p->chunks_total, p->chunks_failed,
                                  p->bytes_done,  p->bytes_total,  p->final};
    if (my_rank == 0) {
        latest[0] = m;
        drain_progress();
        /* The last call comes after the local run: dist_gather waits for the others. */
        if (!p->final)
            show_total(false);
        return;
    }
    int done = 1;
    if (out_req != MPI_REQUEST_NULL)
        MPI_Test(&out_req, &done, MPI_STATUS_IGNORE);
    if (!done && !p->final)
        return; /* the previous report is still on its way: skip this one */
    if (!done)
        MPI_Wait(&out_req, MPI_STATUS_IGNORE);
    outgoing = m;
    MPI_Isend(&outgoing, sizeof(outgoing), MPI_BYTE, 0, TAG_PROGRESS, MPI_COMM_WORLD, &out_req);
}

static sl_status merge_all_codes(sl_plan *plan, int root);

static sl_status
on_phase(void *ctx, uint32_t phase, uint32_t n_phases)
{
    (void)ctx;
    (void)phase;
    if (phase + 1 == n_phases)
        return SL_OK; /* the final exchange follows in dist_gather */
    /* Later phases read what earlier ones wrote: every rank must be done,
     * and know which chunks failed in the others' parts. */
    return running != NULL ? merge_all_codes(running, -1) : SL_OK;
}

void
dist_set_plan(sl_plan *plan)
{
    running = plan;
}

void
dist_plan_opts(struct sl_plan_opts *o, sl_progress_fn *show, void *show_ctx_arg)
{
    if (!active || n_ranks == 1) {
        o->progress = show;
        o->progress_ctx = show_ctx_arg;
        return;
    }
    show_fn = show;
    show_ctx = show_ctx_arg;
    o->n_parts = (uint32_t)n_ranks;
    o->part = (uint32_t)my_rank;
    o->phase_done = on_phase;
    o->progress = on_progress;
    o->progress_ctx = NULL;
    if (!(o->progress_interval_s > 0) || o->progress_interval_s > 1)
        o->progress_interval_s = 0.5;
}

/* Combine codes: the one that is not SL_ESKIPPED (each chunk ran in one rank). */
static void
merge_codes_op(void *in, void *inout, int *len, MPI_Datatype *type)
{
    (void)type;
    const uint8_t *a = in;
    uint8_t *b = inout;
    for (int i = 0; i < *len; i++)
        if (b[i] == SL_ESKIPPED)
            b[i] = a[i];
}

/*
 * Combine every put's codes across ranks and merge what the others ran:
 * into rank `root` only, or (root -1) into every rank.
 */
static sl_status
gather_codes(sl_plan *plan, MPI_Op op, int root)
{
    const sl_graph *g = sl_plan_graph(plan);
    for (uint32_t id = 0; id < sl_graph_node_count(g); id++) {
        struct sl_put_status ps;
        if (sl_plan_put_status(plan, id, &ps, NULL) != SL_OK)
            continue;
        uint64_t n = ps.grid->n_total;
        uint8_t *send = malloc(n ? n : 1), *recv = malloc(n ? n : 1);
        if (send == NULL || recv == NULL) {
            free(send);
            free(recv);
            return SL_ENOMEM;
        }
        memcpy(send, ps.codes, n);
        for (uint64_t at = 0; at < n;) {
            int len = n - at > (1u << 30) ? 1 << 30 : (int)(n - at);
            if (root < 0)
                MPI_Allreduce(send + at, recv + at, len, MPI_BYTE, op, MPI_COMM_WORLD);
            else
                MPI_Reduce(send + at, recv + at, len, MPI_BYTE, op, root, MPI_COMM_WORLD);
            at += (uint64_t)len;
        }
        sl_status st = SL_OK;
        if (root < 0 || my_rank == root) {
            struct sl_error err = SL_ERROR_INIT;
            st = sl_plan_merge_codes(plan, id, recv, n, &err);
            if (st != SL_OK)
                fprintf(stderr, "sluice: merging ranks' results: %s\n", err.text);
        }
        free(send);
        free(recv);
        if (st != SL_OK)
            return st;
    }
    return SL_OK;
}

/* Gather the other ranks' failure records and summaries into rank 0's plan. */
static void
gather_records(sl_plan *plan)
{
    size_t n_mine;
    const struct sl_chunk_error *mine = sl_plan_errors(plan, &n_mine);
    int my_bytes = (int)(n_mine * sizeof(*mine)), *counts = NULL, *displs = NULL;
    if (my_rank == 0) {
        counts = calloc((size_t)n_ranks, sizeof(int));
        displs = calloc((size_t)n_ranks, sizeof(int));
    }
    MPI_Gather(&my_bytes, 1, MPI_INT, counts, 1, MPI_INT, 0, MPI_COMM_WORLD);
    char *all = NULL;
    if (my_rank == 0) {
        counts[0] = 0; /* rank 0's records are already in its plan */
        int total = 0;
        for (int r = 0; r < n_ranks; r++) {
            displs[r] = total;
            total += counts[r];
        }
        all = malloc(total > 0 ? (size_t)total : 1);
    }
    MPI_Gatherv(mine, my_rank == 0 ? 0 : my_bytes, MPI_BYTE, all, counts, displs, MPI_BYTE, 0,
                MPI_COMM_WORLD);
    struct sl_run_summary s, *sums = my_rank == 0 ? calloc((size_t)n_ranks, sizeof(s)) : NULL;
    sl_plan_summary(plan, &s);
    MPI_Gather(&s, sizeof(s), MPI_BYTE, sums, sizeof(s), MPI_BYTE, 0, MPI_COMM_WORLD);
    if (my_rank == 0) {
        for (int r = 1; r < n_ranks; r++) {
            sl_plan_merge_errors(plan, (const struct sl_chunk_error *)(all + displs[r]),
                                 (size_t)counts[r] / sizeof(struct sl_chunk_error));
            sl_plan_merge_summary(plan, &sums[r]);
        }
    }
    free(all);
    free(counts);
    free(displs);
    free(sums);
}

static sl_status
merge_all_codes(sl_plan *plan, int root)
{
    MPI_Op op;
    MPI_Op_create(merge_codes_op, 1, &op);
    sl_status st = gather_codes(plan, op, root);
    MPI_Op_free(&op);
    return st;
}

sl_status
dist_gather(sl_plan *plan, sl_status local_status)
{
    if (!active || n_ranks == 1)
        return local_status;
    if (my_rank == 0) {
        /* Show the whole run's progress until every rank has finished. */
        while (!show_total(false)) {
            struct timespec pause = {.tv_sec = 0, .tv_nsec = 50 * 1000 * 1000};
            nanosleep(&pause, NULL);
            drain_progress();
        }
        show_total(true);
    } else if (out_req != MPI_REQUEST_NULL) {
        MPI_Wait(&out_req, MPI_STATUS_IGNORE);
    }
    sl_status st = merge_all_codes(plan, 0);
    gather_records(plan);
    /* The run's status: rank 0's after merging, or the first rank's own failure. */
    int mine = (int)local_status, *all = my_rank == 0 ? calloc((size_t)n_ranks, sizeof(int)) : NULL;
    MPI_Gather(&mine, 1, MPI_INT, all, 1, MPI_INT, 0, MPI_COMM_WORLD);
    int status = SL_OK;
    if (my_rank == 0) {
        struct sl_run_summary s;
        sl_plan_summary(plan, &s);
        status = st != SL_OK ? (int)st : (int)s.first_error;
        for (int r = 0; r < n_ranks && status == SL_OK; r++)
            status = all[r];
    }
    free(all);
    MPI_Bcast(&status, 1, MPI_INT, 0, MPI_COMM_WORLD);
    gathered = true;
    return (sl_status)status;
}

sl_array *
dist_create_array(sl_store *store, const char *path, const struct sl_array_spec *spec,
                  struct sl_error *err)
{
    if (!active || n_ranks == 1)
        return sl_array_create(store, path, spec, NULL, err);
    sl_array *a = NULL;
    struct sl_error e = SL_ERROR_INIT;
    if (my_rank == 0)
        a = sl_array_create(store, path, spec, NULL, &e);
    /* Rank 0's outcome (its error record included) goes to every rank. */
    MPI_Bcast(&e, sizeof(e), MPI_BYTE, 0, MPI_COMM_WORLD);
    if (my_rank != 0 && e.code == SL_OK)
        a = sl_array_open(store, path, NULL, &e);
    if (a == NULL && err != NULL)
        *err = e;
    return a;
}

sl_status
dist_share(sl_status status, struct sl_error *err)
{
    if (!active || n_ranks == 1)
        return status;
    struct sl_error e = err != NULL ? *err : SL_ERROR_INIT;
    e.code = status;
    MPI_Bcast(&e, sizeof(e), MPI_BYTE, 0, MPI_COMM_WORLD);
    if (err != NULL)
        *err = e;
    return e.code;
}

void
dist_share_text(char *buf, size_t size)
{
    if (!active || n_ranks == 1 || size == 0)
        return;
    MPI_Bcast(buf, (int)size, MPI_CHAR, 0, MPI_COMM_WORLD);
    buf[size - 1] = '\0';
}

int
dist_exit_status(int rc)
{
    if (!active || n_ranks == 1)
        return rc;
    MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
    return rc;
}

int
dist_worst(int rc)
{
    if (!active || n_ranks == 1)
        return rc;
    int worst = rc;
    MPI_Allreduce(&rc, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    return worst;
}

bool
dist_share_flag(bool flag)
{
    if (!active || n_ranks == 1)
        return flag;
    int v = flag ? 1 : 0;
    MPI_Bcast(&v, 1, MPI_INT, 0, MPI_COMM_WORLD);
    return v != 0;
}
