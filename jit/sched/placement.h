/* placement.h — the cost model that places a batch in automatic mode
 * (PE_DEVICE=auto, pe_set_device(-1)): on the CPU or on one of the GPUs,
 * whichever is estimated to have the batch's results soonest, counting
 * the copies its inputs need to get there (residency), its work (array
 * sizes times the catalog's per-element cost) and its dtype (f64 at each
 * device's own rate).  The CUDA executor asks it per batch. */
#ifndef PE_EXEC_PLACEMENT_H
#define PE_EXEC_PLACEMENT_H
#include "../proggen/proggen.h"
#include "../../exec/base/runtime.h"
#include "../../exec/cuda/cuda_driver.h"

/* Places: the host (and its CPU), then GPU k - 1 by CUDA ordinal. */
enum { PE_PLACE_HOST = 0, PE_PLACES = 1 + PE_CUDA_MAX_DEVICES };

/* What the model knows of a processing element. */
typedef struct {
    double bytes_per_s; /* memory bandwidth its kernels reach */
    double work_per_s;  /* f32 work per second, in catalog cost units (adds) per element */
    double f64_ratio;   /* f64 work costs this many times f32 work */
    double batch_s;     /* fixed cost of a batch: launches and events, or waking the threads */
} pe_place_speed;

/* What a batch asks for, wherever it runs. */
typedef struct {
    double work, work_f64;     /* kernel iterations times the catalog cost of its ops, in f32 (or narrower) and in f64 */
    double traffic;            /* bytes its kernels read and write (pe_program_traffic) */
    double missing[PE_PLACES]; /* bytes of its inputs a place lacks (copied there first) */
    int copies[PE_PLACES];     /* how many inputs those are */
    uint32_t drained[PE_PLACES]; /* the GPUs (bit per ordinal) those come from: each must finish its work first */
} pe_batch_needs;

pe_place_speed pe_place_cpu_speed(int threads);
pe_place_speed pe_place_gpu_speed(const pe_cuda_device *d);

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
