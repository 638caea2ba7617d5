/* reference.h — the debugger's values (reference.c): PE_CHECK's reference
 * results and their comparison with what the executors computed, and the
 * values pe_reference and pe_peek return, all computed by the reference
 * interpreter beside the real work. */
#ifndef PE_INTERP_REFERENCE_H
#define PE_INTERP_REFERENCE_H

#include "../base/runtime.h"

typedef enum {
    PE_CHECK_OFF = 0, /* nothing computed twice */
    PE_CHECK_COPYOUT, /* every value copied out (pe_read*, pe_map) is compared with its reference */
    PE_CHECK_ALL      /* and every value a batch stores, once the batch ran */
} pe_check_mode;

/* PE_CHECK's state (reference.c owns it; jit/api/lifecycle.c configures
 * it): what is compared with the reference, the allowed relative error per
 * dtype, and a difference a batch found that no application call has
 * raised yet (its message names the op's line). */
typedef struct {
    int mode;                   /* pe_check_mode */
    double scale[PE_DTYPE__COUNT];
    const pe_site *site;
    char *message;
    bool reported;              /* the run's first difference was raised: no more are looked for */
} pe_check_state;

extern pe_check_state pe_check;

/* The default allowed relative error of each dtype (PE_CHECK_SCALE, when
 * set, replaces the floating types'; integers and bools compare exactly). */
void pe_check_default_scales(double *scale);

/* PE_CHECK: before an executor runs batch b, the reference of each value it
 * computes (from its inputs' references, in double, rounded to its dtype as
 * PE_EXECUTOR=interp does); after, with PE_CHECK=all, the values it stored
 * compared with them in program order: the first difference is kept for
 * pe_check_raise_pending.  The caller tests pe_check.mode first. */
void pe_check_before_run(const pe_batch *b);
void pe_check_after_run(const pe_batch *b);

/* A value being copied out by the call at `s` (`api`): its `fast` bytes
 * (numel elements of p's dtype) compared with its reference; PE_E_CHECK
 * after raising at the line of the op that computed it (the first
 * difference of the run only), else PE_OK. */
pe_status pe_check_copyout(const pe_site *s, const char *api, const pe_port *p, const void *fast);
/* Raises the difference a batch found that was not raised yet (PE_E_CHECK),
 * else PE_OK. */
pe_status pe_check_raise_pending(void);

/* The value of port idx computed by the interpreter, into a new malloc'd buffer of
 * numel elements of p's dtype: from p's expression, in double, without
 * touching the work queue, its batches or any port.  `reference`: values
 * PE_CHECK computed already are taken (the program's reference); else the
 * values the executors computed are.  NULL when it cannot be had (*why
 * then holds a message to free, or NULL when out of memory). */
void *pe_reference_evaluate(uint32_t idx, bool reference, char **why);

#endif
