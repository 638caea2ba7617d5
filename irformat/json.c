/* json.c — JSON string escaping for the trace and HTML exports. */
#include "json.h"

static void write_string(FILE *out, const char *s, int in_html)
{
    fputc('"', out);
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
        switch (*p) {
        case '"': fputs("\\\"", out); break;
        case '\\': fputs("\\\\", out); break;
        case '\n': fputs("\\n", out); break;
        case '\r': fputs("\\r", out); break;
        case '\t': fputs("\\t", out); break;
        case '<': /* "</script>" inside a string would end the element */
        case '>':
        case '&':
            if (in_html) fprintf(out, "\\u%04x", *p);
            else fputc(*p, out);
            break;
        default:
            if (*p < 0x20) fprintf(out, "\\u%04x", *p);
            else fputc(*p, out);
        }
    }
    fputc('"', out);
}

void pe_json_string(FILE *out, const char *s) { write_string(out, s, 0); }
void pe_json_string_html(FILE *out, const char *s) { write_string(out, s, 1); }
