/* api_sparse.h — the sparse matrices' table (api_sparse.c), for pe_shutdown. */
#ifndef PE_JIT_API_SPARSE_H
#define PE_JIT_API_SPARSE_H

/* Forgets every matrix (pe_shutdown, after the ports are gone with the
 * references they held): their handles become stale. */
void pe_csr_forget_all(void);

#endif
