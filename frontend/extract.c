/* extract.c — libclang extraction of a translation unit's static IR.
 *
 * One walk per function definition of the main file keeps a stack of the
 * statements it is inside (regions: the body and loops; constructs: the
 * conditionals that decide whether a statement runs).  A call to a function
 * named pe_*_at is a request: its location is the *expansion* location (a
 * request written through a macro is where the macro is used; requests of one
 * expansion share it and get ordinals), its array arguments are classified
 * after looking through PE_ARG's wrappers (pe__as_array, pe__weak_*): a
 * nested request, an array variable, a source literal (a constant expression
 * naming no variable), or other.  Only argument subtrees are walked, never
 * a call's callee: PE_ARG's _Generic names its operand once more, unevaluated.
 * Array-variable occurrences are collected for lastuse.c. */
#define _GNU_SOURCE
#include "extract.h"

#include <clang-c/Index.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../irformat/ops.h"

#include "../exec/base/grow.h"
#define MAX_DEPTH 256

typedef struct {
    CXTranslationUnit tu;
    CXFile main_file;
    pe_ir_function *fn;
    pe_function_facts *facts;
    CXCursor var_decls[4096]; /* the function's array variables, by index */
    int region_stack[MAX_DEPTH], n_regions_open;
    pe_span construct_stack[MAX_DEPTH];
    bool construct_switch[MAX_DEPTH];
    int n_constructs;
    bool oom;
} walker;

static char *str_of(CXString s)
{
    const char *c = clang_getCString(s);
    char *r = strdup(c ? c : "");
    clang_disposeString(s);
    return r;
}

/* Expansion location in the main file: false if elsewhere (a header). */
static bool where(walker *w, CXCursor c, unsigned *line, unsigned *col, unsigned *offset)
{
    CXFile file;
    clang_getExpansionLocation(clang_getCursorLocation(c), &file, line, col, offset);
    return file && clang_File_isEqual(file, w->main_file);
}

/* A request's (or an operand's) location: where its own macro is used, or
 * where the name is written.  Through a macro argument the expansion
 * location is the outermost macro's; the file location of the first token
 * is the inner macro's name (or the operand itself). */
static bool request_where(walker *w, CXCursor call, unsigned *line, unsigned *col, unsigned *offset)
{
    CXFile file;
    clang_getFileLocation(clang_getRangeStart(clang_getCursorExtent(call)), &file, line, col, offset);
    if (file && clang_File_isEqual(file, w->main_file)) return true;
    return where(w, call, line, col, offset);
}

/* Where a request runs: the end of its call, in the file (through macro
 * arguments) or at the end of its macro's use. */
static unsigned request_end(walker *w, CXCursor call)
{
    CXSourceRange r = clang_getCursorExtent(call);
    CXFile file;
    unsigned line, col, offset;
    clang_getFileLocation(clang_getRangeEnd(r), &file, &line, &col, &offset);
    if (file && clang_File_isEqual(file, w->main_file)) return offset;
    clang_getExpansionLocation(clang_getRangeEnd(r), &file, &line, &col, &offset);
    return offset;
}

static pe_span extent_of(CXCursor c)
{
    CXSourceRange r = clang_getCursorExtent(c);
    unsigned b, e;
    CXFile f;
    clang_getExpansionLocation(clang_getRangeStart(r), &f, NULL, NULL, &b);
    clang_getExpansionLocation(clang_getRangeEnd(r), &f, NULL, NULL, &e);
    return (pe_span){b, e};
}

static enum CXChildVisitResult first_child(CXCursor c, CXCursor parent, CXClientData data)
{
    (void)parent;
    *(CXCursor *)data = c;
    return CXChildVisit_Break;
}

static enum CXChildVisitResult last_child(CXCursor c, CXCursor parent, CXClientData data)
{
    (void)parent;
    *(CXCursor *)data = c;
    return CXChildVisit_Continue;
}

static enum CXChildVisitResult last_compound(CXCursor c, CXCursor parent, CXClientData data)
{
    (void)parent;
    if (clang_getCursorKind(c) == CXCursor_CompoundStmt) *(CXCursor *)data = c;
    return CXChildVisit_Continue;
}

/* Sets *data if the subtree names a variable (enum constants do not count). */
static enum CXChildVisitResult names_variable(CXCursor c, CXCursor parent, CXClientData data)
{
    (void)parent;
    if (clang_getCursorKind(c) == CXCursor_DeclRefExpr &&
        clang_getCursorKind(clang_getCursorReferenced(c)) != CXCursor_EnumConstantDecl) {
        *(bool *)data = true;
        return CXChildVisit_Break;
    }
    return CXChildVisit_Recurse;
}

/* Implicit casts, parentheses: what the expression is. */
static CXCursor strip(CXCursor c)
{
    for (;;) {
        enum CXCursorKind k = clang_getCursorKind(c);
        if (k != CXCursor_UnexposedExpr && k != CXCursor_ParenExpr) return c;
        CXCursor only = clang_getNullCursor();
        clang_visitChildren(c, first_child, &only);
        if (clang_Cursor_isNull(only)) return c;
        c = only;
    }
}

static char *callee_name(CXCursor call)
{
    CXCursor ref = clang_getCursorReferenced(call);
    if (clang_Cursor_isNull(ref)) return strdup("");
    return str_of(clang_getCursorSpelling(ref));
}

static bool is_request_name(const char *n)
{
    size_t len = strlen(n);
    return strncmp(n, "pe_", 3) == 0 && strncmp(n, "pe__", 4) != 0 && len > 6 && strcmp(n + len - 3, "_at") == 0;
}

static bool is_wrapper_name(const char *n) { return strcmp(n, "pe__as_array") == 0 || strncmp(n, "pe__weak_", 9) == 0; }

static enum CXChildVisitResult finds_wrapper(CXCursor c, CXCursor parent, CXClientData data)
{
    (void)parent;
    if (clang_getCursorKind(c) == CXCursor_DeclRefExpr) {
        CXString s = clang_getCursorSpelling(c);
        bool yes = strcmp(clang_getCString(s), "pe__as_array") == 0;
        clang_disposeString(s);
        if (yes) {
            *(bool *)data = true;
            return CXChildVisit_Break;
        }
    }
    return CXChildVisit_Recurse;
}

/* PE_ARG(x): `_Generic((x), pe_array: pe__as_array, float: pe__weak_f32, ...)(x)`,
 * a call whose callee is the selection: true for it (and direct calls of the
 * wrappers). */
static bool is_pe_arg(CXCursor call)
{
    if (clang_getCursorKind(call) != CXCursor_CallExpr || clang_Cursor_getNumArguments(call) != 1) return false;
    char *name = callee_name(call);
    bool yes = is_wrapper_name(name);
    free(name);
    if (yes) return true;
    CXCursor callee = clang_getNullCursor();
    clang_visitChildren(call, first_child, &callee);
    if (!clang_Cursor_isNull(callee)) clang_visitChildren(callee, finds_wrapper, &yes);
    return yes;
}

/* The catalog op a request name asks for ("pe_sum_axis_at" → "sum"), or "". */
static const char *op_of(const char *api)
{
    char base[64];
    size_t len = strlen(api);
    if (len < 7 || len - 6 >= sizeof base) return "";
    memcpy(base, api + 3, len - 6);
    base[len - 6] = 0;
    size_t bl = strlen(base);
    if (bl > 5 && strcmp(base + bl - 5, "_axis") == 0) base[bl - 5] = 0;
    for (int op = 0; op < PE_OP__COUNT; op++)
        if (strcmp(pe_op_table[op].name, base) == 0) return pe_op_table[op].name;
    return "";
}

static bool is_array_type(CXType t)
{
    CXString s = clang_getTypeSpelling(t);
    const char *c = clang_getCString(s);
    bool yes = c && (strcmp(c, "pe_array") == 0 || strcmp(c, "const pe_array") == 0);
    clang_disposeString(s);
    return yes;
}

/* A cursor's extent as the program's text has it.  An expression that
 * begins in a macro's body and ends outside it (`RATE / n`) has an extent
 * from the macro's #define to the expression's end, whose tokens are the
 * file between them; its ends are taken where the program wrote them
 * (clang_getFileLocation: a macro's name where it is used, a macro
 * argument where it was written).  Where both ends are then one place (the
 * whole expression is one macro's body: ALPHA) the body's tokens stay
 * (`0.2f`). */
static CXSourceRange written_extent(walker *w, CXCursor c)
{
    CXSourceRange r = clang_getCursorExtent(c);
    CXFile first_file, last_file;
    unsigned first, last;
    clang_getFileLocation(clang_getRangeStart(r), &first_file, NULL, NULL, &first);
    clang_getFileLocation(clang_getRangeEnd(r), &last_file, NULL, NULL, &last);
    if (!first_file || !last_file || !clang_File_isEqual(first_file, last_file) || last <= first) return r;
    return clang_getRange(clang_getLocationForOffset(w->tu, first_file, first),
                          clang_getLocationForOffset(w->tu, last_file, last));
}

/* The source text of a cursor (its tokens), at most 80 characters. */
static char *text_of(walker *w, CXCursor c)
{
    CXToken *toks;
    unsigned n;
    clang_tokenize(w->tu, written_extent(w, c), &toks, &n);
    char buf[96] = "";
    size_t len = 0;
    for (unsigned i = 0; i < n && len < 80; i++) {
        CXString s = clang_getTokenSpelling(w->tu, toks[i]);
        len += (size_t)snprintf(buf + len, sizeof buf - len, "%s", clang_getCString(s));
        clang_disposeString(s);
    }
    if (len > 80) strcpy(buf + 77, "...");
    clang_disposeTokens(w->tu, toks, n);
    return strdup(buf);
}

/* The spelling of a binary operator: the first token after its left operand. */
static char *binop_spelling(walker *w, CXCursor c, CXCursor lhs)
{
    CXToken *toks;
    unsigned n;
    clang_tokenize(w->tu, clang_getCursorExtent(c), &toks, &n);
    unsigned lhs_end = extent_of(lhs).end;
    char *op = strdup("");
    for (unsigned i = 0; i < n; i++) {
        unsigned off;
        CXFile f;
        clang_getExpansionLocation(clang_getTokenLocation(w->tu, toks[i]), &f, NULL, NULL, &off);
        if (off >= lhs_end && clang_getTokenKind(toks[i]) == CXToken_Punctuation) {
            free(op);
            op = str_of(clang_getTokenSpelling(w->tu, toks[i]));
            break;
        }
    }
    clang_disposeTokens(w->tu, toks, n);
    return op;
}

typedef struct {
    CXCursor items[3];
    int n;
} children3;

static enum CXChildVisitResult collect3(CXCursor c, CXCursor parent, CXClientData data)
{
    (void)parent;
    children3 *k = data;
    if (k->n < 3) k->items[k->n] = c;
    k->n++;
    return CXChildVisit_Continue;
}

static children3 children_of(CXCursor c)
{
    children3 k = {.n = 0};
    clang_visitChildren(c, collect3, &k);
    return k;
}

/* ------------------------------------------------------------- variables */

/* The index of an array variable (a local, a parameter, a global), made on
 * first sight; -1 for anything else.  Only locals can carry last uses. */
static int variable_of(walker *w, CXCursor ref)
{
    enum CXCursorKind k = clang_getCursorKind(ref);
    if ((k != CXCursor_VarDecl && k != CXCursor_ParmDecl) || !is_array_type(clang_getCursorType(ref))) return -1;
    pe_function_facts *f = w->facts;
    for (size_t i = 0; i < f->n_vars; i++)
        if (clang_equalCursors(w->var_decls[i], ref)) return (int)i;
    if (f->n_vars >= sizeof w->var_decls / sizeof *w->var_decls) return -1;
    enum CX_StorageClass sc = clang_Cursor_getStorageClass(ref);
    bool local = k == CXCursor_VarDecl && clang_getCursorKind(clang_getCursorSemanticParent(ref)) == CXCursor_FunctionDecl &&
                 (sc == CX_SC_None || sc == CX_SC_Auto);
    if (!PE_GROW(f->vars, f->vars_cap, f->n_vars + 1)) return w->oom = true, -1;
    w->var_decls[f->n_vars] = ref;
    f->vars[f->n_vars] = (pe_variable){str_of(clang_getCursorSpelling(ref)), local};
    return (int)f->n_vars++;
}

static void add_occurrence(walker *w, int var, pe_occ_kind kind, unsigned offset, int request, int arg)
{
    int order = kind == PE_OCC_USE ? arg : 255;
    pe_function_facts *f = w->facts;
    if (var < 0) return;
    if (kind == PE_OCC_ESCAPE) f->vars[var].killable = false;
    if (!PE_GROW(f->occ, f->occ_cap, f->n_occ + 1)) return (void)(w->oom = true);
    pe_occurrence *o = f->occ;
    int loop = 0;
    for (int i = w->n_regions_open - 1; i >= 0 && !loop; i--)
        if (w->fn->regions[w->region_stack[i]].kind == PE_REGION_LOOP) loop = w->region_stack[i];
    o[f->n_occ++] = (pe_occurrence){var, kind, offset, order, request, arg, w->construct_stack[w->n_constructs - 1],
                                    w->construct_switch[w->n_constructs - 1], loop};
}

/* --------------------------------------------------------------- the walk */

static void walk(walker *w, CXCursor c);
static int request(walker *w, CXCursor call);

static enum CXChildVisitResult walk_child(CXCursor c, CXCursor parent, CXClientData data)
{
    (void)parent;
    walk(data, c);
    return CXChildVisit_Continue;
}

static void walk_children(walker *w, CXCursor c) { clang_visitChildren(c, walk_child, w); }

static void push_construct(walker *w, CXCursor c, bool is_switch)
{
    if (w->n_constructs >= MAX_DEPTH) return;
    w->construct_switch[w->n_constructs] = is_switch;
    w->construct_stack[w->n_constructs++] = extent_of(c);
}

/* Marks the open regions from the innermost outward (through the body if
 * `all`) as not closed. */
static void open_regions(walker *w, bool all)
{
    for (int i = w->n_regions_open - 1; i >= 0; i--) {
        w->fn->regions[w->region_stack[i]].closed = false;
        if (!all && w->fn->regions[w->region_stack[i]].kind == PE_REGION_LOOP) break;
    }
}

static void loop(walker *w, CXCursor c, pe_ir_loop_kind kind)
{
    pe_ir_function *fn = w->fn;
    pe_ir_region *r = realloc(fn->regions, sizeof *r * (fn->n_regions + 1));
    pe_span *bodies = realloc(w->facts->region_body, sizeof *bodies * (fn->n_regions + 1));
    if (bodies) w->facts->region_body = bodies;
    if (!r || !bodies || w->n_regions_open >= MAX_DEPTH) {
        if (r) fn->regions = r;
        w->oom = true;
        return;
    }
    fn->regions = r;
    CXSourceRange ext = clang_getCursorExtent(c);
    unsigned bl, bc, el, ec;
    CXFile f;
    clang_getExpansionLocation(clang_getRangeStart(ext), &f, &bl, &bc, NULL);
    clang_getExpansionLocation(clang_getRangeEnd(ext), &f, &el, &ec, NULL);
    int index = (int)fn->n_regions++;
    r[index] = (pe_ir_region){PE_REGION_LOOP, kind, w->region_stack[w->n_regions_open - 1], bl, bc, el, ec, true, NULL, 0};
    /* the body: the last child of for/while, the first of do */
    CXCursor body = clang_getNullCursor();
    clang_visitChildren(c, kind == PE_LOOP_DO ? first_child : last_child, &body);
    w->facts->region_body[index] = clang_Cursor_isNull(body) ? extent_of(c) : extent_of(body);
    w->region_stack[w->n_regions_open++] = index;
    push_construct(w, clang_Cursor_isNull(body) ? c : body, false);
    walk_children(w, c);
    w->n_constructs--;
    w->n_regions_open--;
}

/* A DeclRefExpr in a context that is neither an operand nor an assignment
 * target: the variable escapes. */
static void escape(walker *w, CXCursor ref)
{
    unsigned l, col, off;
    if (!where(w, ref, &l, &col, &off)) return;
    add_occurrence(w, variable_of(w, clang_getCursorReferenced(ref)), PE_OCC_ESCAPE, off, -1, -1);
}

/* What defines a variable: a PE request (walked, true), {0}, or else false.
 * A request's `result` names the array variable it is assigned to (var: the
 * variable's cursor, or a null cursor when it is not an array variable), so
 * the runtime can follow values through a region (jit/aot/aot.c). */
static bool defining_value(walker *w, CXCursor value, CXCursor var)
{
    CXCursor e = strip(value);
    enum CXCursorKind k = clang_getCursorKind(e);
    if (k == CXCursor_CallExpr) {
        char *name = callee_name(e);
        bool pe = is_request_name(name);
        free(name);
        if (pe) {
            int index = request(w, e);
            if (index >= 0 && !clang_Cursor_isNull(var)) {
                char *spelling = str_of(clang_getCursorSpelling(var));
                if (spelling) {
                    free(w->fn->requests[index].result);
                    w->fn->requests[index].result = spelling;
                } else {
                    w->oom = true;
                }
            }
            return true;
        }
    }
    walk(w, value);
    return k == CXCursor_InitListExpr;
}

typedef struct {
    walker *w;
    int index;
} branch_walk;

/* The condition, then each branch as a construct of its own: a definition
 * in one branch does not run after a use in the other. */
static enum CXChildVisitResult walk_branch(CXCursor c, CXCursor parent, CXClientData data)
{
    (void)parent;
    branch_walk *b = data;
    if (b->index++ == 0) {
        walk(b->w, c);
        return CXChildVisit_Continue;
    }
    push_construct(b->w, c, false);
    walk(b->w, c);
    b->w->n_constructs--;
    return CXChildVisit_Continue;
}

static void walk(walker *w, CXCursor c)
{
    enum CXCursorKind k = clang_getCursorKind(c);
    switch (k) {
    case CXCursor_ForStmt: loop(w, c, PE_LOOP_FOR); return;
    case CXCursor_WhileStmt: loop(w, c, PE_LOOP_WHILE); return;
    case CXCursor_DoStmt: loop(w, c, PE_LOOP_DO); return;
    case CXCursor_IfStmt:
    case CXCursor_ConditionalOperator: {
        branch_walk b = {w, 0};
        push_construct(w, c, false);
        clang_visitChildren(c, walk_branch, &b);
        w->n_constructs--;
        return;
    }
    case CXCursor_SwitchStmt:
        push_construct(w, c, true);
        walk_children(w, c);
        w->n_constructs--;
        return;
    case CXCursor_ReturnStmt: /* leaves every loop around it; the function's own exit */
        for (int i = w->n_regions_open - 1; i > 0; i--) w->fn->regions[w->region_stack[i]].closed = false;
        walk_children(w, c);
        return;
    case CXCursor_GotoStmt:
    case CXCursor_IndirectGotoStmt:
        open_regions(w, true);
        w->facts->has_goto = true;
        return;
    case CXCursor_BreakStmt:
    case CXCursor_ContinueStmt: open_regions(w, false); return;
    case CXCursor_CallExpr: request(w, c); return;
    case CXCursor_DeclRefExpr: escape(w, c); return;
    case CXCursor_VarDecl: {
        children3 kids = children_of(c);
        int var = variable_of(w, c);
        CXCursor init = clang_getNullCursor();
        for (int i = 0; i < kids.n && i < 3; i++) /* the initialiser is the expression child */
            if (clang_isExpression(clang_getCursorKind(kids.items[i]))) init = kids.items[i];
        if (clang_Cursor_isNull(init)) return;
        bool ok = defining_value(w, init, var >= 0 ? c : clang_getNullCursor());
        unsigned l, col;
        if (var >= 0 && where(w, c, &l, &col, &(unsigned){0})) {
            if (!ok) w->facts->vars[var].killable = false;
            add_occurrence(w, var, PE_OCC_DEF, extent_of(c).end, -1, -1);
        }
        return;
    }
    case CXCursor_BinaryOperator: {
        children3 kids = children_of(c);
        if (kids.n != 2) break;
        char *op = binop_spelling(w, c, kids.items[0]);
        CXCursor lhs = strip(kids.items[0]);
        bool logical = strcmp(op, "&&") == 0 || strcmp(op, "||") == 0;
        if (strcmp(op, "=") == 0 && clang_getCursorKind(lhs) == CXCursor_DeclRefExpr) {
            int var = variable_of(w, clang_getCursorReferenced(lhs));
            bool ok = defining_value(w, kids.items[1], var >= 0 ? clang_getCursorReferenced(lhs) : clang_getNullCursor());
            if (var >= 0) {
                if (!ok) w->facts->vars[var].killable = false;
                add_occurrence(w, var, PE_OCC_DEF, extent_of(c).end, -1, -1);
            }
            free(op);
            return;
        }
        free(op);
        if (logical) { /* the right operand runs conditionally */
            walk(w, kids.items[0]);
            push_construct(w, c, false);
            walk(w, kids.items[1]);
            w->n_constructs--;
            return;
        }
        break;
    }
    default: break;
    }
    walk_children(w, c);
}

/* Appends a request for `call` (nested requests first); its index, or -1
 * for a call that is not a request (its arguments are walked). */
static int request(walker *w, CXCursor call)
{
    char *api = callee_name(call);
    int n_args = clang_Cursor_getNumArguments(call);
    if (!is_request_name(api)) {
        /* a call outside PE: its arguments escape, unless it is PE_ARG's wrapper */
        bool takes_arrays = false;
        for (int i = 0; i < n_args; i++) {
            CXCursor a = clang_Cursor_getArgument(call, (unsigned)i);
            CXType t = clang_getCursorType(a);
            takes_arrays |= is_array_type(t) || is_array_type(clang_getPointeeType(t));
            walk(w, a);
        }
        if (takes_arrays && !is_pe_arg(call)) open_regions(w, true);
        free(api);
        return -1;
    }
    CXCursor fdecl = clang_getCursorReferenced(call);
    CXType ftype = clang_getCursorType(fdecl);
    pe_ir_arg args[8];
    int n = 0;
    for (int i = 1; i < n_args; i++) { /* argument 0 is the site */
        CXCursor a = clang_Cursor_getArgument(call, (unsigned)i);
        bool array = i < clang_getNumArgTypes(ftype) ? is_array_type(clang_getArgType(ftype, (unsigned)i))
                                                      : is_array_type(clang_getCursorType(a));
        if (!array || n == 8) {
            walk(w, a);
            continue;
        }
        CXCursor e = strip(a);
        if (is_pe_arg(e)) e = strip(clang_Cursor_getArgument(e, 0));
        pe_ir_arg *arg = &args[n];
        *arg = (pe_ir_arg){PE_ARG_OTHER, NULL, 0, -1, false};
        enum CXCursorKind k = clang_getCursorKind(e);
        bool is_call = k == CXCursor_CallExpr;
        int nested = is_call ? request(w, e) : -1; /* a call is walked here, once */
        if (nested >= 0) {
            arg->kind = PE_ARG_REQUEST;
            arg->request = nested;
            arg->text = text_of(w, e);
        } else if (k == CXCursor_DeclRefExpr && variable_of(w, clang_getCursorReferenced(e)) >= 0) {
            arg->kind = PE_ARG_VARIABLE;
            arg->text = str_of(clang_getCursorSpelling(e));
            arg->request = -2; /* the occurrence is added with this request's index below */
        } else {
            arg->text = text_of(w, e);
            CXEvalResult ev = k == CXCursor_CallExpr ? NULL : clang_Cursor_Evaluate(e);
            bool named = false;
            clang_visitChildren(e, names_variable, &named);
            if (k == CXCursor_DeclRefExpr && clang_getCursorKind(clang_getCursorReferenced(e)) != CXCursor_EnumConstantDecl)
                named = true;
            CXEvalResultKind ek = ev ? clang_EvalResult_getKind(ev) : CXEval_UnExposed;
            if (!named && (ek == CXEval_Int || ek == CXEval_Float)) {
                arg->kind = PE_ARG_LITERAL;
                arg->value = ek == CXEval_Float ? clang_EvalResult_getAsDouble(ev)
                                                : (double)clang_EvalResult_getAsLongLong(ev);
            } else if (!is_call) {
                walk(w, e);
            }
            if (ev) clang_EvalResult_dispose(ev);
        }
        n++;
    }
    unsigned line, col, off;
    if (!request_where(w, call, &line, &col, &off)) { /* a request made inside a header's inline function */
        for (int i = 0; i < n; i++) free(args[i].text);
        free(api);
        return -1;
    }
    pe_ir_function *fn = w->fn;
    pe_ir_request *rq = realloc(fn->requests, sizeof *rq * (fn->n_requests + 1));
    if (!rq) {
        for (int i = 0; i < n; i++) free(args[i].text);
        free(api);
        w->oom = true;
        return -1;
    }
    fn->requests = rq;
    int index = (int)fn->n_requests++;
    int64_t ordinal = 0;
    for (int i = 0; i < index; i++) ordinal += rq[i].line == line && rq[i].column == col;
    rq[index] = (pe_ir_request){line, col, ordinal, api, strdup(op_of(api)), w->region_stack[w->n_regions_open - 1],
                                strdup(""), calloc(n ? (size_t)n : 1, sizeof(pe_ir_arg)), (uint32_t)n};
    if (!rq[index].args || !rq[index].op || !rq[index].result) w->oom = true;
    for (int i = 0; i < n && rq[index].args; i++) {
        if (args[i].request == -2) args[i].request = -1;
        rq[index].args[i] = args[i];
    }
    /* variable operands: occurrences at their own locations */
    int slot = 0;
    for (int i = 1; i < n_args && slot < n; i++) {
        CXCursor a = clang_Cursor_getArgument(call, (unsigned)i);
        bool array = i < clang_getNumArgTypes(ftype) ? is_array_type(clang_getArgType(ftype, (unsigned)i))
                                                      : is_array_type(clang_getCursorType(a));
        if (!array) continue;
        if (rq[index].args && rq[index].args[slot].kind == PE_ARG_VARIABLE) {
            CXCursor e = strip(a);
            if (is_pe_arg(e)) e = strip(clang_Cursor_getArgument(e, 0));
            unsigned l2, c2, o2; /* read when the request runs: at the end of its call */
            if (request_where(w, e, &l2, &c2, &o2))
                add_occurrence(w, variable_of(w, clang_getCursorReferenced(e)), PE_OCC_USE, request_end(w, call), index,
                               slot);
        }
        slot++;
    }
    return index;
}

/* ------------------------------------------------------------- functions */

typedef struct {
    walker *w;
    pe_ir_unit *unit;
    pe_function_facts **facts;
} unit_walk;

static bool function(walker *w, CXCursor fdecl, pe_ir_unit *unit, pe_function_facts **facts_out)
{
    CXCursor body = clang_getNullCursor();
    clang_visitChildren(fdecl, last_compound, &body);
    if (clang_Cursor_isNull(body)) return true;
    pe_ir_function *fns = realloc(unit->functions, sizeof *fns * (unit->n_functions + 1));
    pe_function_facts *facts = realloc(*facts_out, sizeof *facts * (unit->n_functions + 1));
    if (fns) unit->functions = fns;
    if (facts) *facts_out = facts;
    if (!fns || !facts) return false;
    pe_ir_function *fn = &fns[unit->n_functions];
    pe_function_facts *f = &facts[unit->n_functions];
    unit->n_functions++;
    memset(fn, 0, sizeof *fn);
    memset(f, 0, sizeof *f);
    unsigned line, col;
    where(w, fdecl, &line, &col, &(unsigned){0});
    fn->name = str_of(clang_getCursorSpelling(fdecl));
    fn->line = line;
    fn->regions = calloc(1, sizeof *fn->regions);
    f->region_body = calloc(1, sizeof *f->region_body);
    if (!fn->name || !fn->regions || !f->region_body) return false;
    CXSourceRange ext = clang_getCursorExtent(body);
    unsigned bl, bc, el, ec;
    CXFile file;
    clang_getExpansionLocation(clang_getRangeStart(ext), &file, &bl, &bc, NULL);
    clang_getExpansionLocation(clang_getRangeEnd(ext), &file, &el, &ec, NULL);
    fn->regions[0] = (pe_ir_region){PE_REGION_FUNCTION, PE_LOOP_NONE, -1, bl, bc, el, ec, true, NULL, 0};
    fn->n_regions = 1;
    f->region_body[0] = extent_of(body);
    w->fn = fn;
    w->facts = f;
    w->n_regions_open = 1;
    w->region_stack[0] = 0;
    w->n_constructs = 1;
    w->construct_stack[0] = f->region_body[0];
    w->construct_switch[0] = false;
    walk_children(w, body);
    pe_mark_last_uses(fn, f);
    return !w->oom;
}

static enum CXChildVisitResult top_level(CXCursor c, CXCursor parent, CXClientData data)
{
    (void)parent;
    unit_walk *u = data;
    unsigned l, col, off;
    if (clang_getCursorKind(c) == CXCursor_FunctionDecl && clang_isCursorDefinition(c) && where(u->w, c, &l, &col, &off))
        if (!function(u->w, c, u->unit, u->facts)) return CXChildVisit_Break;
    return CXChildVisit_Continue;
}

bool pe_extract(const char *source, const char *const *args, int n_args, pe_ir_unit *unit, pe_function_facts **facts,
                char *err, size_t err_len)
{
    memset(unit, 0, sizeof *unit);
    *facts = NULL;
    CXIndex index = clang_createIndex(0, 0);
    CXTranslationUnit tu = NULL;
    enum CXErrorCode code = clang_parseTranslationUnit2(index, source, args, n_args, NULL, 0,
                                                        CXTranslationUnit_DetailedPreprocessingRecord, &tu);
    bool ok = false;
    if (code != CXError_Success || !tu) {
        snprintf(err, err_len, "libclang could not parse %s (error %d)", source, (int)code);
    } else {
        unsigned errors = 0;
        char first[400] = "";
        for (unsigned i = 0; i < clang_getNumDiagnostics(tu); i++) {
            CXDiagnostic d = clang_getDiagnostic(tu, i);
            if (clang_getDiagnosticSeverity(d) >= CXDiagnostic_Error && errors++ == 0) {
                CXString s = clang_formatDiagnostic(d, clang_defaultDiagnosticDisplayOptions());
                snprintf(first, sizeof first, "%s", clang_getCString(s));
                clang_disposeString(s);
            }
            clang_disposeDiagnostic(d);
        }
        if (errors) {
            snprintf(err, err_len, "libclang found %u error%s in %s: %s", errors, errors == 1 ? "" : "s", source, first);
        } else {
            walker *w = calloc(1, sizeof *w);
            if (w) {
                w->tu = tu;
                w->main_file = clang_getFile(tu, source);
                unit->file = strdup(source);
                CXString v = clang_getClangVersion();
                char producer[200];
                snprintf(producer, sizeof producer, "pecc %s (%s)", PE_VERSION_STRING, clang_getCString(v));
                clang_disposeString(v);
                unit->producer = strdup(producer);
                unit_walk uw = {w, unit, facts};
                clang_visitChildren(clang_getTranslationUnitCursor(tu), top_level, &uw);
                ok = !w->oom && unit->file && unit->producer;
                if (!ok) snprintf(err, err_len, "out of memory extracting %s", source);
                free(w);
            }
        }
        clang_disposeTranslationUnit(tu);
    }
    clang_disposeIndex(index);
    if (!ok) {
        pe_facts_free(*facts, unit->n_functions);
        *facts = NULL;
        pe_ir_free(unit);
    }
    return ok;
}

void pe_facts_free(pe_function_facts *facts, size_t n)
{
    if (!facts) return;
    for (size_t i = 0; i < n; i++) {
        for (size_t v = 0; v < facts[i].n_vars; v++) free(facts[i].vars[v].name);
        free(facts[i].vars), free(facts[i].occ), free(facts[i].region_body);
    }
    free(facts);
}
