/* compile_process.h — a compilation run in a child process (compile_process.c),
 * so that a compiler that ends its process (libgccjit out of memory calls
 * exit(1)) or crashes costs that compilation, not the program. */
#ifndef PE_CPU_COMPILE_PROCESS_H
#define PE_CPU_COMPILE_PROCESS_H

#include <stdbool.h>
#include <stddef.h>

/* A compilation: writes its artifact to a file the parent then reads; true
 * when it did, else false with the compiler's message in err. */
typedef bool (*pe_compile_fn)(void *arg, char *err, size_t n_err);

/* Runs fn(arg) in a forked child and waits for it (one at a time: no other
 * thread of ours is inside the compiler when the child is made).  False
 * with err saying why when fn failed, the child ended without finishing
 * (exit, signal: "out of memory" is libgccjit's exit(1)) or could not be
 * started.  PE_JIT_ISOLATE=0 runs fn in this process instead (for
 * debugging and for measuring what the child costs). */
bool pe_compile_in_child(pe_compile_fn fn, void *arg, char *err, size_t n_err);

#endif
