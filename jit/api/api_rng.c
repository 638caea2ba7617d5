/* api_rng.c — the random generators (pe_rng_create, pe_rng_destroy) and
 * their draws (pe_rng_uniform, pe_rng_normal).
 *
 * A generator is its kind, its seed and the number of draws made from it;
 * it holds no random state.  A draw is a generator port of the catalog
 * (random_uniform, random_normal: irformat/philox.h says what it computes)
 * whose operands are three 0-d i32 constants — the key's words from the
 * seed, and the draw number — and whose parameter is the round count.  The
 * constants are kernel parameters read at launch (`unshared`: never merged
 * with an equal scalar), so the trace key and the kernel are the same for
 * every seed and draw: a loop drawing each iteration hits the trace cache
 * and compiles nothing after its first batch.  A sequence replayed without
 * recording (a macro) binds each draw-number operand afresh for each replay,
 * from pe_rng_redraw, which advances the generator as a recorded draw
 * does. */
#include "api_rng.h"
#include "../record/record.h"
#include "../../exec/base/error.h"
#include "../../exec/base/handle_table.h"
#include "../../exec/base/runtime.h"
#include "../../exec/base/site.h"
#include "../../irformat/philox.h"

#define NO_SLOT UINT32_MAX

typedef struct {
    pe_handle_slot slot;       /* its handle's generation; where it was destroyed */
    uint8_t rounds;            /* PE_PHILOX_ROUNDS or PE_PHILOX_FAST_ROUNDS */
    uint64_t seed;
    uint64_t draws;            /* the next draw's number; at most 2^32 draws */
} generator;

static pe_handle_table gens = PE_HANDLE_TABLE(generator, "generator", "a generator", "pe_rng_destroy");

void pe_rng_forget_all(void) { pe_htable_forget_all(&gens); }

/* r's generator, or NULL after raising PE_E_HANDLE naming the misuse. */
static generator *lookup(const pe_site *s, const char *api, pe_rng r) { return pe_htable_lookup(&gens, s, api, r.h); }

pe_rng pe_rng_create_at(const pe_site *s, int kind, uint64_t seed)
{
    PE_API_GUARD;
    s = PE_SITE_OR_CALLER(s);
    const char *api = "pe_rng_create";
    if (!pe_rt.initialised) return pe_require_init(s, api), (pe_rng){0};
    if (kind != PE_RNG_PHILOX && kind != PE_RNG_FAST) {
        pe_raise(s, PE_E_ARG, api, "unknown generator kind %d (PE_RNG_PHILOX or PE_RNG_FAST)", kind);
        return (pe_rng){0};
    }
    if (!pe_htable_reserve(&gens, s, api)) return (pe_rng){0};
    pe_rng r;
    generator *g = pe_htable_add(&gens, &r.h);
    g->seed = seed;
    g->rounds = kind == PE_RNG_FAST ? PE_PHILOX_FAST_ROUNDS : PE_PHILOX_ROUNDS;
    return r;
}

void pe_rng_destroy_at(const pe_site *s, pe_rng r)
{
    PE_API_GUARD;
    s = PE_SITE_OR_CALLER(s);
    const char *api = "pe_rng_destroy";
    if (!pe_rt.initialised) {
        pe_require_init(s, api);
        return;
    }
    generator *g = lookup(s, api, r);
    if (g) pe_htable_release(g, s);
}

/* A 0-d i32 constant holding the 32-bit word w (as its two's complement
 * value), a kernel parameter of its own.  A draw number's constant names
 * its generator in param[0..1] (slot + 1, generation: pe_rng_redraw); a
 * constant's parameters are in no key and no kernel. */
static uint32_t word_constant(uint32_t w, const generator *of)
{
    uint32_t idx = pe_make_constant(PE_I32, 0, NULL, (double)(int32_t)w, false, NULL);
    if (idx == NO_SLOT) return idx;
    pe_port *p = pe_port_at(idx);
    p->unshared = true;
    if (of) {
        uint64_t h = pe_htable_handle(&gens, of);
        p->param[0] = h & 0xffffffffu, p->param[1] = h >> 32;
    }
    return idx;
}

/* Whether g has made its 2^32 draws (raised at s). */
static bool exhausted(const pe_site *s, const char *api, const generator *g)
{
    if (g->draws <= UINT32_MAX) return false;
    pe_raise(s, PE_E_ARG, api, "generator exhausted: 2^32 draws made (create another with another seed)");
    return true;
}

/* pe_rng_redraw's generator, NULL where it is false. */
static generator *redraw(const pe_site *s, const pe_port *q, uint32_t *draw)
{
    if (q->op != PE_OP_constant || !q->unshared || q->param[0] <= 0) return NULL;
    uint64_t slot = (uint64_t)q->param[0];
    pe_rng r = {((uint64_t)(uint32_t)q->param[1] << 32) | slot};
    const char *api = "pe_rng (a replayed draw)";
    generator *g = lookup(s, api, r);
    if (!g || exhausted(s, api, g)) return NULL;
    *draw = (uint32_t)g->draws++;
    return g;
}

bool pe_rng_redraw(const pe_site *s, const pe_port *q, uint32_t *draw) { return redraw(s, q, draw) != NULL; }

uint32_t pe_rng_replay_operand(const pe_site *s, uint32_t qi)
{
    const pe_port *q = pe_port_at(qi);
    if (q->op != PE_OP_constant || !q->unshared || q->param[0] <= 0) return qi;
    uint32_t draw;
    const generator *g = redraw(s, q, &draw);
    if (!g) return NO_SLOT;
    uint32_t idx = word_constant(draw, g);
    if (idx == NO_SLOT) pe_raise(s, PE_E_NOMEM, "pe_rng (a replayed draw)", "out of memory for the port table");
    return idx;
}

static pe_array draw(const pe_site *s, const char *api, pe_op op, pe_rng r, pe_dtype t, int rank, const int64_t *shape)
{
    if (!pe_rt.initialised) return pe_require_init(s, api), (pe_array){0};
    generator *g = lookup(s, api, r);
    if (!g) return pe_invalid_result(s, op, PE_E_HANDLE);
    if (!pe_check_dtype(s, api, t)) return pe_invalid_result(s, op, PE_E_TYPE);
    if (t == PE_BOOL || (op == PE_OP_random_normal && t == PE_I32)) {
        pe_raise(s, PE_E_TYPE, api, "%s draws are %s", t == PE_BOOL ? "bool" : "i32",
                 op == PE_OP_random_normal ? "not defined (PE_F32 or PE_F64)" : "not defined (PE_F32, PE_F64 or PE_I32)");
        return pe_invalid_result(s, op, PE_E_TYPE);
    }
    if (!pe_check_shape(s, api, rank, shape)) return pe_invalid_result(s, op, PE_E_SHAPE);
    if (exhausted(s, api, g)) return pe_invalid_result(s, op, PE_E_ARG);
    uint32_t in[3] = {word_constant((uint32_t)g->seed, NULL), word_constant((uint32_t)(g->seed >> 32), NULL),
                      word_constant((uint32_t)g->draws, g)};
    int64_t rounds = g->rounds;
    pe_array h = {0};
    if (in[0] != NO_SLOT && in[1] != NO_SLOT && in[2] != NO_SLOT)
        h = pe_record_op(s, op, in, 3, t, t, rank, shape, &rounds, 1);
    else
        pe_raise(s, PE_E_NOMEM, api, "out of memory for the port table");
    for (int k = 0; k < 3; k++) /* a recorded draw holds them; otherwise they go */
        if (in[k] != NO_SLOT) pe_port_maybe_free(in[k]);
    if (!h.h) return pe_invalid_result(s, op, pe_last_error() ? pe_last_error()->code : PE_E_NOMEM);
    g->draws++;
    return h;
}

pe_array pe_rng_uniform_at(const pe_site *s, pe_rng r, pe_dtype t, int rank, const int64_t *shape)
{
    PE_API_GUARD;
    return draw(PE_SITE_OR_CALLER(s), "pe_rng_uniform", PE_OP_random_uniform, r, t, rank, shape);
}

pe_array pe_rng_normal_at(const pe_site *s, pe_rng r, pe_dtype t, int rank, const int64_t *shape)
{
    PE_API_GUARD;
    return draw(PE_SITE_OR_CALLER(s), "pe_rng_normal", PE_OP_random_normal, r, t, rank, shape);
}
