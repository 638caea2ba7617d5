/* placement.h — the cost model that places a batch in automatic mode
 * (PE_DEVICE=auto, pe_set_device(-1)): on the CPU or on one of the GPUs,
 * whichever is estimated to have the batch's results soonest, counting
 * the copies its inputs need to get there (residency), its work (array
 * sizes times the catalog's per-element cost) and its dtype (f64 at each
 * device's own rate).  The batch driver asks it per batch. */
#ifndef PE_EXEC_PLACEMENT_H
#define PE_EXEC_PLACEMENT_H
#include "../proggen/proggen.h"
#include "../../exec/base/runtime.h"
#include "../../exec/base/executor.h"

/* Places: the host (and its CPU), then the devices (exec/base/executor.h);
 * each executor gives its places' speeds (pe_executor.speed). */
enum { PE_PLACE_HOST = 0, PE_PLACES = PE_MAX_PLACES };

/* What a batch asks for, wherever it runs. */
typedef struct {
    double work, work_f64;     /* kernel iterations times the catalog cost of its ops, in f32 (or narrower) and in f64 */
    double traffic;            /* bytes its kernels read and write (pe_program_traffic) */
    double missing[PE_PLACES]; /* bytes of its inputs a place lacks (copied there first) */
    int copies[PE_PLACES];     /* how many inputs those are */
    uint32_t drained[PE_PLACES]; /* the GPUs (bit per ordinal) those come from: each must finish its work first */
} pe_batch_needs;

/* A batch's needs, from its program sequence (which does not depend on
 * the device) and its inputs' residency now (run time: inputs from
 * outside the batch are READY, its own ports PENDING).  Programs the
 * interpreter runs count nowhere: they run on the CPU wherever the batch
 * goes.  False when out of memory. */
bool pe_place_needs(const pe_program_seq *seq, pe_batch_needs *out);

/* Estimated seconds until the batch's results exist at `place`. */
double pe_place_seconds(const pe_batch_needs *n, int place, const pe_place_speed *s);

/* The place with the smallest estimate among those with a speed
 * (speeds[place] NULL: not usable; the host's must be given), the host on a
 * tie; *seconds gets its estimate. */
int pe_place_cheapest(const pe_batch_needs *n, const pe_place_speed *const speeds[PE_PLACES], double *seconds);

#endif
