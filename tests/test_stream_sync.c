/* test_stream_sync.c — the stream/event planner (exec/cuda/stream_sync.c)
 * against a model of CUDA's semantics: streams run their commands in order;
 * an event record is enqueued on a stream; a wait, when enqueued, captures
 * the event's most recent record and blocks its stream until that record's
 * stream got there.  Thousands of random DAGs, each run under many random
 * interleavings of the streams: no operation may start before all of its
 * producers finished, no schedule may dead-lock, and the plan must need no
 * more waits than one per cross-stream dependency (and fewer overall). */
#include "test_util.h"

#include "exec/cuda/stream_sync.h"

typedef struct {
    int kind;      /* 0 wait, 1 op */
    int a, b;      /* wait: stream, position it needs; op: op index */
} command;

static unsigned rng_state;
static unsigned rnd(unsigned n)
{
    rng_state = rng_state * 1103515245u + 12345u;
    return (rng_state >> 8) % n;
}

/* Runs the plan under `schedules` random interleavings; false on a violation. */
static bool model_check(const pe_sync_dag *dag, const pe_sync_plan *plan, int events, int schedules)
{
    int n = dag->n_ops, S = plan->streams_used;
    command *q = malloc(sizeof *q * (size_t)(S * (2 * n + 1) + 1));
    int *len = calloc((size_t)S, sizeof *len), *head = calloc((size_t)S, sizeof *head);
    int *done_pos = calloc((size_t)S, sizeof *done_pos), *pos = calloc((size_t)S, sizeof *pos);
    int *slot_stream = malloc(sizeof(int) * (size_t)events), *slot_pos = malloc(sizeof(int) * (size_t)events);
    char *done = calloc((size_t)(n ? n : 1), 1);
    const int stride = 2 * n + 1;
    bool ok = true;
    /* the host enqueues in issue order: waits capture the slot's current record */
    for (int e = 0; e < events; e++) slot_stream[e] = -1;
    for (int i = 0; i < n && ok; i++) {
        const pe_sync_op *op = &plan->ops[i];
        int s = op->stream;
        for (int w = 0; w < op->n_waits; w++) {
            int slot = plan->waits[op->wait_begin + w];
            if (slot < 0 || slot >= events || slot_stream[slot] < 0) ok = false; /* a wait on nothing recorded */
            else q[s * stride + len[s]++] = (command){0, slot_stream[slot], slot_pos[slot]};
        }
        q[s * stride + len[s]++] = (command){1, i, 0};
        pos[s]++;
        if (op->record_event >= 0) slot_stream[op->record_event] = s, slot_pos[op->record_event] = pos[s];
    }
    for (int run = 0; run < schedules && ok; run++) {
        memset(head, 0, sizeof(int) * (size_t)S);
        memset(done_pos, 0, sizeof(int) * (size_t)S);
        memset(done, 0, (size_t)(n ? n : 1));
        int remaining = n;
        while (remaining > 0 && ok) {
            /* a random stream that can move */
            int start = (int)rnd((unsigned)S), s = -1;
            for (int k = 0; k < S && s < 0; k++) {
                int t = (start + k) % S;
                if (head[t] == len[t]) continue;
                command c = q[t * stride + head[t]];
                if (c.kind == 1 || done_pos[c.a] >= c.b) s = t;
            }
            if (s < 0) { /* dead-lock */
                ok = false;
                break;
            }
            command c = q[s * stride + head[s]++];
            if (c.kind == 0) continue;
            const int *p = dag->preds + dag->pred_start[c.a];
            for (int k = 0; k < dag->pred_start[c.a + 1] - dag->pred_start[c.a]; k++)
                if (!done[p[k]]) ok = false; /* a missing dependency */
            done[c.a] = 1;
            done_pos[s]++;
            remaining--;
        }
    }
    free(q), free(len), free(head), free(done_pos), free(pos), free(slot_stream), free(slot_pos), free(done);
    return ok;
}

/* A random DAG: each op depends on up to `fan` earlier ops, mostly recent ones. */
static void random_dag(int n, int fan, int *start, int *preds)
{
    int e = 0;
    for (int i = 0; i < n; i++) {
        start[i] = e;
        int k = i ? (int)rnd((unsigned)fan + 1) : 0;
        for (int m = 0; m < k; m++) {
            int back = (int)rnd(8) < 6 ? 1 + (int)rnd(i < 4 ? (unsigned)i : 4u) : 1 + (int)rnd((unsigned)i);
            preds[e++] = i - back;
        }
    }
    start[n] = e;
}

static void test_random_dags_under_random_schedules(void **state)
{
    (void)state;
    rng_state = 12345;
    long naive = 0, planned = 0, records = 0;
    int plans = 0;
    int *start = malloc(sizeof(int) * 402), *preds = malloc(sizeof(int) * 400 * 6);
    for (int round = 0; round < 3000; round++) {
        int n = 1 + (int)rnd(round % 10 == 0 ? 400 : 60);
        int fan = 1 + (int)rnd(5), S = 1 + (int)rnd(8), E = 1 + (int)rnd(64);
        random_dag(n, fan, start, preds);
        pe_sync_dag dag = {n, start, preds};
        pe_sync_plan plan;
        assert_true(pe_sync_plan_make(&dag, S, E, &plan));
        assert_true(plan.streams_used == (S < E ? S : E));
        assert_true(plan.n_waits <= plan.naive_waits);
        if (!model_check(&dag, &plan, E, 20)) {
            fprintf(stderr, "violation: n=%d fan=%d streams=%d events=%d\n", n, fan, S, E);
            fail();
        }
        naive += plan.naive_waits, planned += plan.n_waits, records += plan.n_records;
        plans++;
        pe_sync_plan_free(&plan);
    }
    printf("%d random DAGs x 20 schedules: waits %ld planned vs %ld naive (one per cross-stream dependency), "
           "%ld event records\n", plans, planned, naive, records);
    assert_true(planned < naive);
    free(start), free(preds);
}

static void test_edge_cases(void **state)
{
    (void)state;
    pe_sync_plan plan;
    int start0[1] = {0};
    pe_sync_dag empty = {0, start0, NULL};
    assert_true(pe_sync_plan_make(&empty, 4, 8, &plan));
    assert_int_equal(plan.n_waits, 0);
    pe_sync_plan_free(&plan);

    /* a chain stays on one stream: no waits, no records */
    int cs[6] = {0, 0, 1, 2, 3, 4}, cp[4] = {0, 1, 2, 3};
    pe_sync_dag chain = {5, cs, cp};
    assert_true(pe_sync_plan_make(&chain, 4, 8, &plan));
    assert_int_equal(plan.n_waits, 0);
    assert_int_equal(plan.n_records, 0);
    for (int i = 1; i < 5; i++) assert_int_equal(plan.ops[i].stream, plan.ops[0].stream);
    pe_sync_plan_free(&plan);

    /* independent ops spread over the streams; a join waits for the others */
    int fs[6] = {0, 0, 0, 0, 0, 4}, fp[4] = {0, 1, 2, 3};
    pe_sync_dag fan_in = {5, fs, fp};
    assert_true(pe_sync_plan_make(&fan_in, 4, 8, &plan));
    for (int i = 0; i < 4; i++) assert_int_equal(plan.ops[i].stream, i);
    assert_int_equal(plan.n_waits, 3);
    assert_true(model_check(&fan_in, &plan, 8, 50));
    /* the model catches a plan missing a wait */
    plan.ops[4].n_waits = 2;
    assert_false(model_check(&fan_in, &plan, 8, 200));
    pe_sync_plan_free(&plan);

    /* one stream: everything in order, nothing to wait for */
    assert_true(pe_sync_plan_make(&fan_in, 1, 1, &plan));
    assert_int_equal(plan.n_waits, 0);
    pe_sync_plan_free(&plan);

    /* fewer events than streams: only as many streams as events */
    assert_true(pe_sync_plan_make(&fan_in, 8, 2, &plan));
    assert_int_equal(plan.streams_used, 2);
    assert_true(model_check(&fan_in, &plan, 2, 50));
    pe_sync_plan_free(&plan);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_edge_cases),
        cmocka_unit_test(test_random_dags_under_random_schedules),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
