/* test_static_ir.c — the static IR codec: a unit with every kind of
 * region, request and argument round-trips (decode(encode(u)) re-encodes to
 * the same bytes, field by field equal); each structural rule of the
 * validator rejects a unit that breaks it; truncated, corrupt and foreign
 * input is refused with a message.  `test_static_ir --write-seeds DIR`
 * writes the fuzzer's seed corpus (tests/corpus/static_ir). */
#include "test_util.h"

#include <sys/stat.h>

#include "irformat/msgblob.h"
#include "irformat/static_ir.h"

static pe_ir_arg args_exp[] = {{PE_ARG_VARIABLE, "x", 0, -1, false}};
static pe_ir_arg args_mul[] = {{PE_ARG_REQUEST, "pe_exp(x)", 0, 0, false}, {PE_ARG_LITERAL, "0.5f", 0.5, -1, false}};
static pe_ir_arg args_add[] = {{PE_ARG_VARIABLE, "y", 0, -1, true}, {PE_ARG_OTHER, "s->bias", 0, -1, false}};
static pe_ir_arg args_read[] = {{PE_ARG_VARIABLE, "z", 0, -1, true}, {PE_ARG_OTHER, "&v", 0, -1, false}};
static char *carried[] = {"acc"};

/* A hand-made unit: main with a for loop holding a do loop and a block. */
static pe_ir_unit sample(pe_ir_function *fn, pe_ir_region *regions, pe_ir_request *requests)
{
    regions[0] = (pe_ir_region){PE_REGION_FUNCTION, PE_LOOP_NONE, -1, 10, 1, 40, 1, true, NULL, 0};
    regions[1] = (pe_ir_region){PE_REGION_LOOP, PE_LOOP_FOR, 0, 12, 5, 30, 5, true, carried, 1};
    regions[2] = (pe_ir_region){PE_REGION_LOOP, PE_LOOP_DO, 1, 14, 9, 20, 9, false, NULL, 0};
    regions[3] = (pe_ir_region){PE_REGION_MACRO, PE_LOOP_NONE, 1, 22, 9, 26, 9, true, NULL, 0};
    requests[0] = (pe_ir_request){15, 17, 0, "pe_exp_at", "exp", 2, "", args_exp, 1};
    requests[1] = (pe_ir_request){15, 17, 1, "pe_mul_at", "mul", 2, "y", args_mul, 2};
    requests[2] = (pe_ir_request){23, 13, 0, "pe_add_at", "add", 3, "z", args_add, 2};
    requests[3] = (pe_ir_request){24, 9, 0, "pe_read_f32_at", "", 3, "", args_read, 2};
    *fn = (pe_ir_function){"main", 10, regions, 4, requests, 4};
    return (pe_ir_unit){"examples/sample.c", "pecc test", fn, 1};
}

static uint8_t *encode_sample_with(void (*edit)(pe_ir_function *), size_t *len)
{
    pe_ir_function fn;
    pe_ir_region regions[4];
    pe_ir_request requests[4];
    pe_ir_unit u = sample(&fn, regions, requests);
    pe_ir_arg a0[1], a1[2], a2[2], a3[2];
    memcpy(a0, args_exp, sizeof a0), memcpy(a1, args_mul, sizeof a1), memcpy(a2, args_add, sizeof a2),
        memcpy(a3, args_read, sizeof a3);
    requests[0].args = a0, requests[1].args = a1, requests[2].args = a2, requests[3].args = a3;
    if (edit) edit(&fn);
    uint8_t *b = pe_ir_encode(&u, len);
    assert_non_null(b);
    return b;
}

static void test_round_trip(void **state)
{
    (void)state;
    size_t len, len2;
    uint8_t *blob = encode_sample_with(NULL, &len);
    pe_ir_unit u;
    char err[300];
    if (!pe_ir_decode(&u, blob, len, err, sizeof err)) fail_msg("%s", err);
    assert_string_equal(u.file, "examples/sample.c");
    assert_int_equal(u.n_functions, 1);
    const pe_ir_function *fn = &u.functions[0];
    assert_string_equal(fn->name, "main");
    assert_int_equal(fn->n_regions, 4);
    assert_int_equal(fn->regions[2].loop, PE_LOOP_DO);
    assert_int_equal(fn->regions[2].parent, 1);
    assert_false(fn->regions[2].closed);
    assert_int_equal(fn->regions[1].n_carried, 1);
    assert_string_equal(fn->regions[1].carried[0], "acc");
    assert_int_equal(fn->n_requests, 4);
    assert_int_equal(fn->requests[1].ordinal, 1);
    assert_int_equal(fn->requests[1].args[0].kind, PE_ARG_REQUEST);
    assert_int_equal(fn->requests[1].args[0].request, 0);
    assert_true(fn->requests[1].args[1].value == 0.5);
    assert_true(fn->requests[2].args[0].kill);
    assert_string_equal(fn->requests[2].args[1].text, "s->bias");
    assert_string_equal(fn->requests[3].api, "pe_read_f32_at");
    uint8_t *again = pe_ir_encode(&u, &len2);
    assert_int_equal(len, len2);
    assert_memory_equal(blob, again, len);
    /* the listings name what is there */
    char *text = NULL, *json = NULL;
    size_t tl, jl;
    FILE *f = open_memstream(&text, &tl);
    pe_ir_print_text(&u, f);
    fclose(f);
    f = open_memstream(&json, &jl);
    pe_ir_print_json(&u, f);
    fclose(f);
    assert_non_null(strstr(text, "region 2: loop do, parent 1, 14:9-20:9, open"));
    assert_non_null(strstr(text, "y = pe_mul_at op mul(request 0, literal 0.5f = 0.5)"));
    assert_non_null(strstr(text, "variable z (last use)"));
    assert_non_null(strstr(json, "\"kind\":\"literal\",\"text\":\"0.5f\",\"value\":0.5"));
    free(text), free(json);
    pe_ir_free(&u);
    free(blob), free(again);
}

static void edit_parent_forward(pe_ir_function *fn) { fn->regions[1].parent = 2; }
static void edit_body_not_first(pe_ir_function *fn) { fn->regions[0].kind = PE_REGION_LOOP; }
static void edit_nested_forward(pe_ir_function *fn) { fn->requests[1].args[0].request = 1; }
static void edit_kill_literal(pe_ir_function *fn) { fn->requests[1].args[1].kill = true; }
static void edit_region_range(pe_ir_function *fn) { fn->requests[3].region = 4; }
static void edit_arg_kind(pe_ir_function *fn) { fn->requests[0].args[0].kind = PE_ARG__COUNT; }
static void edit_negative_line(pe_ir_function *fn) { fn->requests[0].line = -3; }
static void edit_no_regions(pe_ir_function *fn) { fn->n_regions = 0, fn->n_requests = 0; }

static void test_validator_rules(void **state)
{
    (void)state;
    static const struct {
        void (*edit)(pe_ir_function *);
        const char *says;
    } rules[] = {
        {edit_parent_forward, "parent"},   {edit_body_not_first, "parent"},  {edit_nested_forward, "nested request"},
        {edit_kill_literal, "kill"},       {edit_region_range, "region 4"},  {edit_arg_kind, "unknown kind"},
        {edit_negative_line, "negative"},  {edit_no_regions, "no body"},
    };
    for (size_t i = 0; i < sizeof rules / sizeof *rules; i++) {
        size_t len;
        uint8_t *blob = encode_sample_with(rules[i].edit, &len);
        pe_ir_unit u;
        char err[300] = "";
        if (pe_ir_decode(&u, blob, len, err, sizeof err)) fail_msg("rule %zu: accepted", i);
        if (!strstr(err, rules[i].says)) fail_msg("rule %zu: '%s' does not say '%s'", i, err, rules[i].says);
        free(blob);
    }
}

static void test_truncated_corrupt_foreign(void **state)
{
    (void)state;
    size_t len;
    uint8_t *blob = encode_sample_with(NULL, &len);
    pe_ir_unit u;
    char err[300];
    for (size_t cut = 0; cut < len; cut++) assert_false(pe_ir_decode(&u, blob, cut, err, sizeof err));
    /* payload damage behind a recomputed checksum: refused or decoded, never a crash */
    srand(11);
    size_t plen = len - PE_BLOB_HEADER_SIZE;
    uint8_t *copy = malloc(plen);
    int refused = 0;
    for (int i = 0; i < 4000; i++) {
        memcpy(copy, blob + PE_BLOB_HEADER_SIZE, plen);
        copy[(size_t)rand() % plen] ^= (uint8_t)(1 + rand() % 255);
        msgpack_sbuffer sb = {.size = plen, .data = (char *)copy, .alloc = plen};
        size_t flen;
        uint8_t *framed = pe_blob_frame(PE_IR_MAGIC, PE_IR_VERSION, &sb, &flen);
        if (pe_ir_decode(&u, framed, flen, err, sizeof err)) pe_ir_free(&u);
        else refused++, assert_non_null(strstr(err, "PE static IR"));
        free(framed);
    }
    assert_true(refused > 1000);
    free(copy);
    /* a profile is not an IR, nor is text */
    memcpy(blob, "PEPF", 4);
    assert_false(pe_ir_decode(&u, blob, len, err, sizeof err));
    assert_non_null(strstr(err, "wrong magic"));
    assert_false(pe_ir_decode(&u, "int main(void) { return 0; }", 28, err, sizeof err));
    free(blob);
}

/* The fuzzer's seeds: the sample, and each rule's broken variant. */
static int write_seeds(const char *dir)
{
    mkdir(dir, 0755);
    void (*edits[])(pe_ir_function *) = {NULL, edit_parent_forward, edit_nested_forward, edit_kill_literal,
                                         edit_region_range};
    for (size_t i = 0; i < sizeof edits / sizeof *edits; i++) {
        size_t len;
        uint8_t *blob = encode_sample_with(edits[i], &len);
        char path[512];
        snprintf(path, sizeof path, "%s/seed%zu.peir", dir, i);
        FILE *f = fopen(path, "wb");
        if (!f || fwrite(blob, 1, len, f) != len) return 1;
        fclose(f);
        free(blob);
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "--write-seeds") == 0) return write_seeds(argv[2]);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_validator_rules),
        cmocka_unit_test(test_truncated_corrupt_foreign),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
