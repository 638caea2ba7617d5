/* test_cache_security.c — what PE opens on disk is checked before it is
 * trusted (issue 22, items 5-8 and 10): the cache directory is pinned at
 * pe_init (a path swapped afterwards by another user changes nothing), cache
 * content is authenticated by a per-user MAC (a re-sealed shared object or
 * trace file is refused with a warning and rebuilt), a FIFO in a cached
 * file's or a profile's place does not hang, PE_PROFILE never replaces a
 * device node or a symlink (issue 36: it writes through a link of the
 * user's to a target of the user's in a directory closed to others, and
 * refuses any other link), a PE_CACHE_DIR that is a symlink to a directory
 * of the user's closed to others is used and pinned at pe_init (one to a
 * directory others can write is refused), and an overlong PE_CACHE_DIR is
 * refused.  Each
 * program runs in a forked child (stderr to a file, alarm() against a hang);
 * values are checked against a C loop. */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test_util.h"
#include "irformat/fnv.h"
#include "jit/cache/blake2s.h"
#include "profiler/profdb.h"

#define N 1000 /* iterations: a numel the trace tamper finds (msgpack 0xcd 0x03 0xe8) */

/* The runtime the programs run on: the JIT (whose kernels go to disk; the
 * interpreter's run of this test too), no compile ahead (kernels come from
 * the disk cache at the batch, not before).  False if it does not start. */
static bool start(const char *cache_dir, const char *profile)
{
    setenv("PE_EXECUTOR", "jit", 1);
    setenv("PE_LOG", "warn", 1);
    setenv("PE_AOT", "0", 1);
    pe_config cfg = {.cache_dir = cache_dir, .profile = profile};
    return pe_init(&cfg) == PE_OK;
}

static char stats_path[200]; /* where compute() writes its counts ("" none) */

/* The work: a fused kernel, read back and checked against a C loop, then
 * pe_shutdown.  0 values right, 2 a wrong value. */
static int compute(void)
{
    static float x[N], y[N];
    for (int i = 0; i < N; i++) x[i] = (float)i / N - 0.5f;
    pe_array a = pe_f32_1d(x, N);
    pe_array r = pe_add(pe_mul(pe_sin(a), 2.0f), pe_exp(pe_neg(a)));
    int rc = pe_read(r, y, sizeof y) == PE_OK ? 0 : 2;
    for (int i = 0; i < N && rc == 0; i++) {
        double want = sin((double)x[i]) * 2.0 + exp(-(double)x[i]); /* the oracle */
        if (fabs(y[i] - want) > 1e-6 * fabs(want) + 1e-7) rc = 2;
    }
    pe_release(a), pe_release(r);
    pe_stats st;
    pe_get_stats(&st);
    if (stats_path[0]) { /* for the parent: what this run compiled, what it found on disk */
        FILE *f = fopen(stats_path, "w");
        if (f) fprintf(f, "%llu %llu\n", (unsigned long long)st.kernels_compiled, (unsigned long long)st.disk_cache_hits),
                  fclose(f);
    }
    pe_shutdown();
    return rc;
}

/* Kernels the last program compiled and loaded from the disk cache. */
static void last_stats(const char *dir, unsigned long long *compiled, unsigned long long *hits)
{
    char path[200];
    snprintf(path, sizeof path, "%s/stats.txt", dir);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    assert_int_equal(fscanf(f, "%llu %llu", compiled, hits), 2);
    fclose(f);
}

/* 0 values right, 2 a wrong value, 4 no runtime. */
static int program(const char *cache_dir, const char *profile) { return start(cache_dir, profile) ? compute() : 4; }

/* Runs program() in a child with stderr in dir/stderr.txt, killed after 60 s;
 * fails unless it exits 0.  Returns its stderr (static). */
static const char *run_program(const char *dir, const char *cache_dir, const char *profile)
{
    static char text[16384];
    char log[4200];
    snprintf(log, sizeof log, "%s/stderr.txt", dir);
    snprintf(stats_path, sizeof stats_path, "%s/stats.txt", dir);
    fflush(stderr);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        alarm(60);
        if (!freopen(log, "w", stderr)) _exit(5);
        int rc = program(cache_dir, profile);
        fflush(stderr);
        _exit(rc);
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    FILE *f = fopen(log, "r");
    size_t n = f ? fread(text, 1, sizeof text - 1, f) : 0;
    text[n] = 0;
    if (f) fclose(f);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        fail_msg("the program ended with %s %d (SIGALRM: it hung); its stderr:\n%s",
                 WIFEXITED(status) ? "status" : "signal", WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status),
                 text);
    return text;
}

static void make_temp(char *dir, size_t n)
{
    snprintf(dir, n, "/tmp/pe-sec-XXXXXX");
    assert_non_null(mkdtemp(dir));
}

/* Calls fn(dir, name) for each file of dir whose name ends in `ext`. */
static int each_file(const char *dir, const char *ext, void (*fn)(const char *dir, const char *name, void *ctx), void *ctx)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name), elen = strlen(ext);
        if (e->d_name[0] == '.' || len < elen || strcmp(e->d_name + len - elen, ext) != 0) continue;
        fn(dir, e->d_name, ctx);
        n++;
    }
    closedir(d);
    return n;
}

static unsigned char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    *len = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *buf = malloc(*len + 1);
    assert_int_equal(fread(buf, 1, *len, f), *len);
    fclose(f);
    return buf;
}

static void spit(const char *path, const void *data, size_t len)
{
    unlink(path);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, len, f), len);
    assert_int_equal(fclose(f), 0);
}

/* ------------------------------------------------------------ the MAC */

static void blake2s_known_answers(void **state)
{
    (void)state;
    uint8_t key[32], data[256], out[32];
    for (int i = 0; i < 32; i++) key[i] = (uint8_t)i;
    for (int i = 0; i < 256; i++) data[i] = (uint8_t)i;
    /* RFC 7693 appendix B, and the reference implementation's keyed KAT
     * (blake2s-kat.txt: key 00..1f, messages 00.. of length 0, 1, 64, 255) */
    static const struct { size_t len; const char *key_hex, *hex; } kat[] = {
        {3, NULL, "508c5e8c327c14e2e1a72ba34eeb452f37458b209ed63a294d999b4c86675982"},
        {0, "k", "48a8997da407876b3d79c0d92325ad3b89cbb754d86ab71aee047ad345fd2c49"},
        {1, "k", "40d15fee7c328830166ac3f918650f807e7e01e177258cdc0a39b11f598066f1"},
        {64, "k", "8975b0577fd35566d750b362b0897a26c399136df07bababbde6203ff2954ed4"},
        {255, "k", "3fb735061abc519dfe979e54c1ee5bfad0a9d858b3315bad34bde999efd724dd"},
    };
    for (size_t i = 0; i < sizeof kat / sizeof kat[0]; i++) {
        if (kat[i].key_hex) pe_blake2s(out, key, 32, data, kat[i].len);
        else pe_blake2s(out, NULL, 0, "abc", 3);
        char hex[65];
        for (int b = 0; b < 32; b++) snprintf(hex + 2 * b, 3, "%02x", out[b]);
        assert_string_equal(hex, kat[i].hex);
    }
}

/* ---------------------------------------------- planted and re-sealed code */

/* A shared object whose constructor creates `marker`: if PE ever loads it,
 * foreign code ran inside PE. */
static void build_planted(const char *dir, const char *marker, char *so, size_t n)
{
    char src[4200], cmd[9000];
    snprintf(src, sizeof src, "%s/planted.c", dir);
    snprintf(so, n, "%s/planted.so", dir);
    FILE *f = fopen(src, "w");
    assert_non_null(f);
    fprintf(f, "#include <fcntl.h>\n#include <unistd.h>\n"
               "__attribute__((constructor)) static void planted(void) { close(creat(\"%s\", 0644)); }\n", marker);
    fclose(f);
    snprintf(cmd, sizeof cmd, "cc -shared -fPIC -o '%s' '%s'", so, src);
    assert_int_equal(system(cmd), 0);
}

typedef struct {
    const char *planted; /* the foreign object */
    bool keyed;          /* seal with a MAC under a key that is not the user's, else FNV-1a as PE once did */
} plant;

/* Replaces a cached file by the planted object, sealed as well as someone
 * without the user's key can: the trailer's magic, size and a checksum. */
static void replace_sealed(const char *dir, const char *name, void *ctx)
{
    const plant *p = ctx;
    size_t len;
    unsigned char *buf = slurp(p->planted, &len);
    buf = realloc(buf, len + 48);
    uint64_t size = len;
    if (p->keyed) {
        uint8_t key[32];
        for (int i = 0; i < 32; i++) key[i] = (uint8_t)(i * 7 + 1);
        memcpy(buf + len, "PEKCACH2", 8), memcpy(buf + len + 8, &size, 8);
        pe_blake2s(buf + len + 16, key, sizeof key, buf, len);
        len += 48;
    } else {
        uint64_t h = pe_fnv_bytes(PE_FNV_OFFSET, buf, len);
        memcpy(buf + len, "PEKCACHE", 8), memcpy(buf + len + 8, &size, 8), memcpy(buf + len + 16, &h, 8);
        len += 24;
    }
    char path[4400];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    spit(path, buf, len);
    free(buf);
}

static void tampered_kernels_are_refused(void **state)
{
    (void)state;
    char dir[64], cache[128], marker[128], so[4200];
    make_temp(dir, sizeof dir);
    snprintf(cache, sizeof cache, "%s/cache", dir);
    snprintf(marker, sizeof marker, "%s/planted-code-ran", dir);
    build_planted(dir, marker, so, sizeof so);
    for (int keyed = 0; keyed <= 1; keyed++) {
        run_program(dir, cache, NULL); /* fills the cache */
        plant p = {so, keyed};
        assert_true(each_file(cache, ".so", replace_sealed, &p) > 0);
        const char *err = run_program(dir, cache, NULL); /* values right: recompiled */
        if (access(marker, F_OK) == 0) fail_msg("PE loaded a re-sealed foreign object (keyed %d); stderr:\n%s", keyed, err);
        if (!strstr(err, "not sealed with this user's key"))
            fail_msg("no warning about the forged kernel file (keyed %d); stderr:\n%s", keyed, err);
    }
    tu_remove_dir(dir);
}

/* Changes the trace file's numel 1000 to 500 (msgpack 0xcd 03e8 -> 01f4)
 * and re-frames it with a valid checksum: the kernel would then compute half
 * the result, silently. */
static void retouch_trace(const char *dir, const char *name, void *ctx)
{
    (void)ctx;
    char path[4400];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    size_t len;
    unsigned char *buf = slurp(path, &len);
    uint32_t payload = (uint32_t)buf[8] | (uint32_t)buf[9] << 8 | (uint32_t)buf[10] << 16 | (uint32_t)buf[11] << 24;
    assert_true(20 + (size_t)payload <= len);
    int changed = 0;
    for (size_t i = 20; i + 2 < 20 + (size_t)payload; i++)
        if (buf[i] == 0xcd && buf[i + 1] == 0x03 && buf[i + 2] == 0xe8) buf[i + 1] = 0x01, buf[i + 2] = 0xf4, changed++;
    assert_true(changed > 0);
    uint64_t h = pe_fnv_bytes(PE_FNV_OFFSET, buf + 20, payload);
    for (int b = 0; b < 8; b++) buf[12 + b] = (unsigned char)(h >> (8 * b));
    spit(path, buf, len);
    free(buf);
}

static void tampered_trace_is_refused(void **state)
{
    (void)state;
    char dir[64], cache[128];
    make_temp(dir, sizeof dir);
    snprintf(cache, sizeof cache, "%s/cache", dir);
    run_program(dir, cache, NULL); /* fills the cache, the trace file at shutdown */
    assert_true(each_file(cache, ".petc", retouch_trace, NULL) > 0);
    const char *err = run_program(dir, cache, NULL); /* values right: the program generator again */
    if (!strstr(err, "traces-") || !strstr(err, "not sealed with this user's key"))
        fail_msg("no warning about the forged trace file; stderr:\n%s", err);
    tu_remove_dir(dir);
}

/* -------------------------------------------------------------- FIFOs */

static void replace_by_nothing(const char *dir, const char *name, void *ctx) { (void)dir, (void)name, (void)ctx; }

static void replace_by_fifo(const char *dir, const char *name, void *ctx)
{
    (void)ctx;
    char path[4400];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    assert_int_equal(unlink(path), 0);
    assert_int_equal(mkfifo(path, 0600), 0);
}

static void fifo_in_a_cached_file_does_not_hang(void **state)
{
    (void)state;
    char dir[64], cache[128];
    make_temp(dir, sizeof dir);
    snprintf(cache, sizeof cache, "%s/cache", dir);
    run_program(dir, cache, NULL);
    assert_true(each_file(cache, ".so", replace_by_fifo, NULL) > 0);
    assert_true(each_file(cache, ".petc", replace_by_fifo, NULL) > 0);
    const char *err = run_program(dir, cache, NULL); /* killed by SIGALRM if it blocks */
    if (!strstr(err, "a FIFO")) fail_msg("no warning about the FIFOs; stderr:\n%s", err);
    tu_remove_dir(dir);
}

static void fifo_as_a_profile_does_not_hang(void **state)
{
    (void)state;
    char dir[64], fifo[128];
    make_temp(dir, sizeof dir);
    snprintf(fifo, sizeof fifo, "%s/profile.pedb", dir);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    pid_t pid = fork(); /* pe-prof report's load, in a child that a hang would not outlive */
    assert_true(pid >= 0);
    if (pid == 0) {
        alarm(20);
        pe_profile p;
        char err[600];
        bool loaded = pe_profile_load(&p, fifo, err, sizeof err);
        _exit(!loaded && strstr(err, "a FIFO") ? 0 : 1);
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    tu_remove_dir(dir);
}

/* ---------------------------------------------------------- PE_PROFILE */

/* Whether path holds a profile database PE wrote. */
static bool is_profile(const char *path)
{
    pe_profile p;
    char err[600];
    if (!pe_profile_load(&p, path, err, sizeof err)) return false;
    pe_profile_free(&p);
    return true;
}

/* Whether path still holds the 4 bytes "keep". */
static bool kept(const char *path)
{
    size_t len;
    unsigned char *b = slurp(path, &len);
    bool same = len == 4 && memcmp(b, "keep", 4) == 0;
    free(b);
    return same;
}

static void assert_link(const char *link, const char *err)
{
    struct stat st;
    assert_int_equal(lstat(link, &st), 0);
    if (!S_ISLNK(st.st_mode)) fail_msg("PE_PROFILE replaced the symlink %s; stderr:\n%s", link, err);
}

/* docs/environment.md, PE_PROFILE: a symlink of the user's, in a directory others cannot
 * change, to a file of the user's (or none yet) in a directory closed to
 * others is written through; the link stays. */
static void profile_written_through_a_symlink(void **state)
{
    (void)state;
    char dir[64], cache[128], mine[128], target[160], link[128], fresh[160], link2[128], chain[128];
    make_temp(dir, sizeof dir);
    snprintf(cache, sizeof cache, "%s/cache", dir);
    snprintf(mine, sizeof mine, "%s/profiles", dir); /* ~/profiles: ours, 0700 */
    snprintf(target, sizeof target, "%s/run.pep", mine);
    snprintf(fresh, sizeof fresh, "%s/new.pep", mine);
    snprintf(link, sizeof link, "%s/link.pep", dir);
    snprintf(link2, sizeof link2, "%s/dangling.pep", dir);
    snprintf(chain, sizeof chain, "%s/chain.pep", dir);
    assert_int_equal(mkdir(mine, 0700), 0);
    spit(target, "keep", 4);
    assert_int_equal(symlink(target, link), 0);
    const char *err = run_program(dir, cache, link);
    assert_link(link, err);
    if (!is_profile(target) || !strstr(err, "profile written to"))
        fail_msg("the profile did not go through the symlink to its target; stderr:\n%s", err);
    /* a link to a file not there yet (relative), and a link to that link */
    assert_int_equal(symlink("profiles/new.pep", link2), 0);
    assert_int_equal(symlink("dangling.pep", chain), 0);
    err = run_program(dir, cache, chain);
    assert_link(chain, err);
    assert_link(link2, err);
    if (!is_profile(fresh)) fail_msg("no profile created at the dangling link's target; stderr:\n%s", err);
    tu_remove_dir(dir);
}

/* Runs with PE_PROFILE=link and checks that nothing was written: the link
 * is still one, its target still "keep", and the message says `why`. */
static void assert_refused(const char *dir, const char *cache, const char *link, const char *target, const char *why)
{
    const char *err = run_program(dir, cache, link);
    assert_link(link, err);
    if (!kept(target)) fail_msg("PE_PROFILE wrote through %s to %s; stderr:\n%s", link, target, err);
    if (!strstr(err, "pe: profile not written") || !strstr(err, why))
        fail_msg("no message \"%s\" about %s; stderr:\n%s", why, link, err);
}

static void profile_never_replaces_a_device_or_a_foreign_symlink(void **state)
{
    (void)state;
    char dir[64], cache[128], node[128], wide[128], target[160], link[128], open_dir[128], link2[160], mine[128],
        target2[160];
    make_temp(dir, sizeof dir);
    snprintf(cache, sizeof cache, "%s/cache", dir);
    snprintf(node, sizeof node, "%s/null", dir);
    /* the target's directory is writable by group or by others */
    snprintf(wide, sizeof wide, "%s/wide", dir);
    snprintf(target, sizeof target, "%s/run.pep", wide);
    snprintf(link, sizeof link, "%s/link.pep", dir);
    assert_int_equal(mkdir(wide, 0700), 0);
    spit(target, "keep", 4);
    assert_int_equal(symlink(target, link), 0);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(chmod(wide, i ? 0707 : 0770), 0);
        assert_refused(dir, cache, link, target, "not written through");
    }
    /* the link in a directory others can write (not sticky): another user's
     * link there would name a file of ours */
    snprintf(mine, sizeof mine, "%s/mine", dir);
    snprintf(target2, sizeof target2, "%s/run.pep", mine);
    snprintf(open_dir, sizeof open_dir, "%s/open", dir);
    snprintf(link2, sizeof link2, "%s/link.pep", open_dir);
    assert_int_equal(mkdir(mine, 0700), 0);
    spit(target2, "keep", 4);
    assert_int_equal(mkdir(open_dir, 0700), 0);
    assert_int_equal(chmod(open_dir, 0777), 0);
    assert_int_equal(symlink(target2, link2), 0);
    assert_refused(dir, cache, link2, target2, "a symlink in a directory others can change");
    /* another user's link, even in a sticky directory (/tmp) */
    if (geteuid() == 0) {
        assert_int_equal(chmod(open_dir, 01777), 0);
        assert_int_equal(lchown(link2, 65534, 65534), 0);
        assert_refused(dir, cache, link2, target2, "a symlink that is not this user's");
        /* a target that is another user's file */
        assert_int_equal(lchown(link2, 0, 0), 0);
        assert_int_equal(chown(target2, 65534, 65534), 0);
        assert_refused(dir, cache, link2, target2, "a file that is not this user's");
    }
    /* a device node of our own (as /dev/null is), where we may make one */
    if (mknod(node, S_IFCHR | 0666, makedev(1, 3)) == 0) {
        const char *err = run_program(dir, cache, node);
        struct stat st;
        assert_int_equal(lstat(node, &st), 0);
        if (!S_ISCHR(st.st_mode)) fail_msg("PE_PROFILE replaced a device node; stderr:\n%s", err);
        if (!strstr(err, "a device: not replaced")) fail_msg("no message about the device; stderr:\n%s", err);
        /* nor through a link of ours */
        char dlink[160];
        snprintf(dlink, sizeof dlink, "%s/dev.pep", dir);
        assert_int_equal(symlink(node, dlink), 0);
        err = run_program(dir, cache, dlink);
        assert_int_equal(lstat(node, &st), 0);
        if (!S_ISCHR(st.st_mode)) fail_msg("PE_PROFILE replaced a device node through a link; stderr:\n%s", err);
        if (!strstr(err, "a device: not replaced")) fail_msg("no message about the linked device; stderr:\n%s", err);
    }
    tu_remove_dir(dir);
}

/* ------------------------------------------------------ PE_CACHE_DIR */

static void overlong_cache_dir_is_refused(void **state)
{
    (void)state;
    char dir[64], cache[6000], first[4200];
    make_temp(dir, sizeof dir);
    int n = snprintf(cache, sizeof cache, "%s", dir);
    while (n < 5000) n += snprintf(cache + n, sizeof cache - (size_t)n, "/%0200d", 0); /* components of 201 bytes */
    snprintf(first, sizeof first, "%s/%0200d", dir, 0);
    const char *err = run_program(dir, cache, NULL);
    if (!strstr(err, "too long")) fail_msg("no warning about the overlong PE_CACHE_DIR; stderr:\n%s", err);
    assert_int_not_equal(access(first, F_OK), 0); /* nothing made under a truncated path */
    tu_remove_dir(dir);
}

/* ------------------------------------------ PE_CACHE_DIR as a symlink */

/* ~/.cache on another disk: PE_CACHE_DIR a symlink to a directory of ours,
 * closed to others.  The first run compiles and files its kernels there, the
 * second loads them from disk. */
static void symlinked_cache_dir_is_used(void **state)
{
    (void)state;
    char dir[64], real[128], link[128];
    make_temp(dir, sizeof dir);
    snprintf(real, sizeof real, "%s/disk2-cache", dir);
    snprintf(link, sizeof link, "%s/cache", dir);
    assert_int_equal(mkdir(real, 0700), 0);
    assert_int_equal(symlink("disk2-cache", link), 0); /* relative, as ln -s makes them */
    const char *err = run_program(dir, link, NULL);
    if (strstr(err, "not kept on disk")) fail_msg("the symlinked cache was refused; stderr:\n%s", err);
    unsigned long long compiled, hits;
    last_stats(dir, &compiled, &hits);
    assert_true(compiled > 0);
    assert_true(each_file(real, ".so", replace_by_nothing, NULL) > 0);
    assert_true(each_file(real, ".petc", replace_by_nothing, NULL) > 0);
    err = run_program(dir, link, NULL);
    last_stats(dir, &compiled, &hits);
    if (compiled != 0 || hits == 0)
        fail_msg("the second run compiled %llu kernels, loaded %llu from disk; stderr:\n%s", compiled, hits, err);
    struct stat st;
    assert_int_equal(lstat(link, &st), 0);
    assert_true(S_ISLNK(st.st_mode));
    tu_remove_dir(dir);
}

/* PE_CACHE_DIR is a symlink; once pe_init is done it is pointed at another
 * directory of ours.  Everything the run files (kernels compiled after the
 * swap, the trace file at shutdown) goes to the directory resolved at
 * pe_init, nothing to the new one. */
static void symlinked_cache_dir_swapped_at_run_time(void **state)
{
    (void)state;
    char dir[64], first[128], second[128], link[128], tmp[128], log[128];
    make_temp(dir, sizeof dir);
    snprintf(first, sizeof first, "%s/first", dir);
    snprintf(second, sizeof second, "%s/second", dir);
    snprintf(link, sizeof link, "%s/cache", dir);
    snprintf(tmp, sizeof tmp, "%s/cache.new", dir);
    snprintf(log, sizeof log, "%s/stderr.txt", dir);
    assert_int_equal(mkdir(first, 0700), 0);
    assert_int_equal(mkdir(second, 0700), 0);
    assert_int_equal(symlink(first, link), 0);
    int ready[2], go[2];
    assert_int_equal(pipe(ready), 0), assert_int_equal(pipe(go), 0);
    fflush(stderr);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        alarm(60);
        char c = 0;
        if (!freopen(log, "w", stderr)) _exit(5);
        if (!start(link, NULL)) _exit(4);
        if (write(ready[1], &c, 1) != 1 || read(go[0], &c, 1) != 1) _exit(5);
        _exit(compute()); /* compiles, files the kernels, saves the trace file */
    }
    char c = 0;
    assert_int_equal(read(ready[0], &c, 1), 1);
    assert_int_equal(symlink(second, tmp), 0);
    assert_int_equal(rename(tmp, link), 0); /* the link now names `second` */
    assert_int_equal(write(go[1], &c, 1), 1);
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    size_t len = 0;
    unsigned char *text = slurp(log, &len);
    text[len] = 0;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) fail_msg("the program ended with %d; stderr:\n%s", status, text);
    if (each_file(second, "", replace_by_nothing, NULL) != 0)
        fail_msg("files went to the directory the link named after pe_init; stderr:\n%s", text);
    char key[160];
    snprintf(key, sizeof key, "%s/.key", second);
    assert_int_not_equal(access(key, F_OK), 0);
    if (each_file(first, ".so", replace_by_nothing, NULL) == 0 || each_file(first, ".petc", replace_by_nothing, NULL) == 0)
        fail_msg("the kernels and the trace file are not in the directory resolved at pe_init; stderr:\n%s", text);
    free(text);
    close(ready[0]), close(ready[1]), close(go[0]), close(go[1]);
    tu_remove_dir(dir);
}

/* A symlink to a directory others may write (group or others), or to
 * another user's, is refused with the warning: no disk cache, nothing made
 * there. */
static void symlink_to_an_open_cache_dir_is_refused(void **state)
{
    (void)state;
    char dir[64], wide[128], link[128], key[160];
    make_temp(dir, sizeof dir);
    snprintf(wide, sizeof wide, "%s/wide", dir);
    snprintf(link, sizeof link, "%s/cache", dir);
    snprintf(key, sizeof key, "%s/.key", wide);
    assert_int_equal(mkdir(wide, 0700), 0);
    assert_int_equal(symlink(wide, link), 0);
    const mode_t modes[] = {0770, 0707, 0777};
    for (int i = 0; i < 4; i++) {
        if (i == 3) { /* another user's, closed to others */
            if (geteuid() != 0) break;
            assert_int_equal(chmod(wide, 0700), 0);
            assert_int_equal(chown(wide, 65534, 65534), 0);
        } else {
            assert_int_equal(chmod(wide, modes[i]), 0);
        }
        const char *err = run_program(dir, link, NULL);
        if (!strstr(err, "through a symlink") || !strstr(err, "not kept on disk"))
            fail_msg("no warning about the symlinked cache (case %d); stderr:\n%s", i, err);
        unsigned long long compiled, hits;
        last_stats(dir, &compiled, &hits);
        assert_true(hits == 0);
        assert_int_equal(each_file(wide, "", replace_by_nothing, NULL), 0);
        assert_int_not_equal(access(key, F_OK), 0);
    }
    tu_remove_dir(dir);
}

/* ------------------------------------------- the directory swapped away */

#define ATTACKER 65534

/* The victim (root) runs with PE_CACHE_DIR under a directory the attacker
 * owns; the attacker points it at root's own cache (which passes pe_init's
 * checks), then, once pe_init is done, at a directory of planted objects
 * under the names of root's kernels. */
static void swapped_cache_dir_changes_nothing(void **state)
{
    (void)state;
    if (geteuid() != 0) {
        print_message("skipped: needs root (a second user)\n");
        skip();
    }
    char dir[64], rootdir[128], rootcache[160], evil[128], evilcache[160], marker[128], so[4200], attic[128], d[160],
        cache[200];
    make_temp(dir, sizeof dir);
    chmod(dir, 0755);
    snprintf(rootdir, sizeof rootdir, "%s/root", dir);
    snprintf(rootcache, sizeof rootcache, "%s/cache", rootdir);
    snprintf(evil, sizeof evil, "%s/evil", dir);
    snprintf(evilcache, sizeof evilcache, "%s/cache", evil);
    snprintf(attic, sizeof attic, "%s/attacker", dir);
    snprintf(d, sizeof d, "%s/d", attic);
    snprintf(cache, sizeof cache, "%s/cache", d);
    snprintf(marker, sizeof marker, "%s/planted-code-ran", dir);
    assert_int_equal(mkdir(rootdir, 0700), 0);
    run_program(dir, rootcache, NULL); /* root's cache, with its kernels' names */
    build_planted(dir, marker, so, sizeof so);
    char cmd[2000];
    snprintf(cmd, sizeof cmd, "mkdir -p '%s' && cp -a '%s/.' '%s/' && chmod 700 '%s' '%s'", evilcache, rootcache,
             evilcache, evil, evilcache);
    assert_int_equal(system(cmd), 0);
    plant p = {so, false};
    assert_true(each_file(evilcache, ".so", replace_sealed, &p) > 0);
    snprintf(cmd, sizeof cmd, "chown -R %d:%d '%s' && mkdir '%s' && chown %d '%s'", ATTACKER, ATTACKER, evil, attic,
             ATTACKER, attic);
    assert_int_equal(system(cmd), 0);
    /* root's run must find its kernels on disk, not in a trace or in memory */
    snprintf(cmd, sizeof cmd, "rm -f '%s'/*.petc '%s'/*.petc", rootcache, evilcache);
    assert_int_equal(system(cmd), 0);

    int ready[2], go[2], done[2];
    assert_int_equal(pipe(ready), 0), assert_int_equal(pipe(go), 0), assert_int_equal(pipe(done), 0);
    pid_t attacker = fork();
    assert_true(attacker >= 0);
    if (attacker == 0) {
        alarm(60);
        char c = 0, tmp[200];
        snprintf(tmp, sizeof tmp, "%s/d.new", attic);
        if (setgid(ATTACKER) != 0 || setuid(ATTACKER) != 0 || symlink(rootdir, d) != 0) _exit(1);
        if (write(ready[1], &c, 1) != 1 || read(go[0], &c, 1) != 1) _exit(1);
        if (symlink(evil, tmp) != 0 || rename(tmp, d) != 0) _exit(1); /* after pe_init */
        _exit(write(done[1], &c, 1) == 1 ? 0 : 1);
    }
    char log[200];
    snprintf(log, sizeof log, "%s/stderr.txt", dir);
    pid_t victim = fork();
    assert_true(victim >= 0);
    if (victim == 0) {
        alarm(60);
        char c = 0;
        if (!freopen(log, "w", stderr) || read(ready[0], &c, 1) != 1) _exit(5);
        if (!start(cache, NULL)) _exit(4);
        if (write(go[1], &c, 1) != 1 || read(done[0], &c, 1) != 1) _exit(5);
        _exit(compute());
    }
    int st_a, st_v;
    assert_int_equal(waitpid(attacker, &st_a, 0), attacker);
    assert_int_equal(waitpid(victim, &st_v, 0), victim);
    size_t len = 0;
    unsigned char *text = slurp(log, &len);
    text[len] = 0;
    if (!WIFEXITED(st_a) || WEXITSTATUS(st_a) != 0) fail_msg("the attacker's part failed");
    if (!WIFEXITED(st_v) || WEXITSTATUS(st_v) != 0) fail_msg("the victim ended with status %d; stderr:\n%s", st_v, text);
    if (access(marker, F_OK) == 0) fail_msg("root loaded code another user planted; stderr:\n%s", text);
    free(text);
    tu_remove_dir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(blake2s_known_answers),
        cmocka_unit_test(tampered_kernels_are_refused),
        cmocka_unit_test(tampered_trace_is_refused),
        cmocka_unit_test(fifo_in_a_cached_file_does_not_hang),
        cmocka_unit_test(fifo_as_a_profile_does_not_hang),
        cmocka_unit_test(profile_written_through_a_symlink),
        cmocka_unit_test(profile_never_replaces_a_device_or_a_foreign_symlink),
        cmocka_unit_test(overlong_cache_dir_is_refused),
        cmocka_unit_test(symlinked_cache_dir_is_used),
        cmocka_unit_test(symlinked_cache_dir_swapped_at_run_time),
        cmocka_unit_test(symlink_to_an_open_cache_dir_is_refused),
        cmocka_unit_test(swapped_cache_dir_changes_nothing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
