/* json.h — the little JSON writing the exports need (pe-prof's trace and
 * page, pe-ir's listing): strings escaped per RFC 8259. */
#ifndef PE_IRFORMAT_JSON_H
#define PE_IRFORMAT_JSON_H

#include <stdio.h>

void pe_json_string(FILE *out, const char *s);
/* The same, also safe inside an HTML <script> element ("</" is escaped). */
void pe_json_string_html(FILE *out, const char *s);

#endif
