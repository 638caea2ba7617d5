/* export_html.c — one self-contained HTML page for a profile: the data as a
 * JSON object in the page and a small script that draws, as SVG, the
 * timeline (one row per track, one box per event) and a bar chart of the
 * lines by attributed time (with the bytes each stored that nothing read).  No outside resources: it opens anywhere.  When
 * it has drawn, the script marks <body> with data-drawn and the counts of
 * what it drew (the test reads them through headless Chromium). */
#include <inttypes.h>
#include <stdlib.h>

#include "export.h"
#include "report.h"
#include "../irformat/json.h"

#define MAX_PAGE_EVENTS 50000 /* keeps the page light; the trace export has them all */
#define MAX_PAGE_LINES 40

static const char page_head[] =
    "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>PE profile</title>\n<style>\n"
    "body{font:13px system-ui,sans-serif;margin:16px;color:#222}\nh1{font-size:18px;margin:0 0 4px}\n"
    "h2{font-size:15px;margin:18px 0 6px}\n.meta{color:#555}\nsvg text{font:11px system-ui,sans-serif}\n"
    ".legend span{display:inline-block;margin-right:12px}\n.legend i{display:inline-block;width:10px;height:10px;"
    "margin-right:4px}\n</style></head>\n<body>\n<h1 id=\"title\"></h1><div class=\"meta\" id=\"meta\"></div>\n"
    "<h2>Timeline</h2><div class=\"legend\" id=\"legend\"></div><div id=\"timeline\"></div>\n"
    "<h2>Time by source line</h2><div class=\"legend\"><span><i style=\"background:#3b7dd8\"></i>kernel shares"
    "</span><span><i style=\"background:#c9a227\"></i>direct: reads, writes, copies</span></div>"
    "<div id=\"lines\"></div>\n<script>\n";

static const char page_script[] =
    "const NS='http://www.w3.org/2000/svg';\n"
    "const COLORS={kernel:'#3b7dd8',compile:'#d8843b',proggen:'#9b59b6',to_device:'#2ca02c',to_host:'#17becf',"
    "wait:'#bbbbbb',read:'#e377c2',write:'#8c564b'};\n"
    "function el(name,attrs,parent){const e=document.createElementNS(NS,name);"
    "for(const k in attrs)e.setAttribute(k,attrs[k]);if(parent)parent.appendChild(e);return e;}\n"
    "function ms(ns){return (ns/1e6).toFixed(3)+' ms';}\n"
    "function draw(){\n"
    " document.getElementById('title').textContent='PE profile: '+D.program;\n"
    " document.getElementById('meta').textContent=D.device+' | '+D.threads+' threads | wall '+ms(D.wall_ns)+"
    "' | '+D.n_events+' events'+(D.events.length<D.n_events?' ('+D.events.length+' shown)':'');\n"
    " const lg=document.getElementById('legend');\n"
    " for(const k in COLORS){const s=document.createElement('span');s.innerHTML='<i style=\"background:'+COLORS[k]+"
    "'\"></i>'+k;lg.appendChild(s);}\n"
    " const W=1100,L=170,H=24,top=20;\n"
    " let end=1;for(const e of D.events)end=Math.max(end,e[2]+e[3]);end=Math.max(end,D.wall_ns);\n"
    " const svg=el('svg',{width:W,height:top+D.tracks.length*H+10},document.getElementById('timeline'));\n"
    " const x=t=>L+(W-L-10)*t/end;\n"
    " for(let i=0;i<=5;i++){const t=end*i/5;el('line',{x1:x(t),x2:x(t),y1:top-4,y2:top+D.tracks.length*H,"
    "stroke:'#ddd'},svg);el('text',{x:x(t)-10,y:12},svg).textContent=(t/1e6).toFixed(1)+' ms';}\n"
    " D.tracks.forEach((name,i)=>{el('text',{x:4,y:top+i*H+15},svg).textContent=name;});\n"
    " let boxes=0;\n"
    " /* longest first: a kernel run inside a wait on the same thread is drawn over it */\n"
    " const order=D.events.slice().sort((a,b)=>b[3]-a[3]);\n"
    " for(const e of order){const r=el('rect',{x:x(e[2]),y:top+e[1]*H+3,width:Math.max(0.6,x(e[2]+e[3])-x(e[2])),"
    "height:H-6,fill:COLORS[D.kinds[e[0]]]||'#000'},svg);\n"
    "  el('title',{},r).textContent=D.kinds[e[0]]+(e[4]>=0&&D.kinds[e[0]]==='kernel'?' '+D.kernels[e[4]]:'')+"
    "' '+ms(e[3])+(e[5]?' '+e[5]+' bytes':'');boxes++;}\n"
    " const rows=D.lines,BW=1100,BL=420,BH=20;\n"
    " const bars=el('svg',{width:BW,height:rows.length*BH+10},document.getElementById('lines'));\n"
    " const most=rows.length?Math.max(1,rows[0][1]+rows[0][2]):1;let drawn=0;\n"
    " rows.forEach((r,i)=>{const y=i*BH+4,w=(BW-BL-110)*(r[1]+r[2])/most;\n"
    "  el('text',{x:4,y:y+13},bars).textContent=r[0];\n"
    "  el('rect',{x:BL,y:y,width:Math.max(0.6,w*r[1]/Math.max(1e-9,r[1]+r[2])),height:BH-6,fill:COLORS.kernel},bars);\n"
    "  el('rect',{x:BL+w*r[1]/Math.max(1e-9,r[1]+r[2]),y:y,width:w*r[2]/Math.max(1e-9,r[1]+r[2]),height:BH-6,"
    "fill:'#c9a227'},bars);\n"
    "  el('text',{x:BL+w+6,y:y+13},bars).textContent=ms(r[1]+r[2])+"
    "(r[3]?', '+(r[3]/1e6).toFixed(3)+' MB stored, never read':'');drawn++;});\n"
    " document.body.dataset.events=boxes;document.body.dataset.bars=drawn;document.body.dataset.drawn='yes';\n"
    "}\n"
    "draw();\n</script>\n</body></html>\n";

void pe_prof_export_html(const pe_profile *p, FILE *out)
{
    fputs(page_head, out);
    fprintf(out, "const D={\"program\":");
    pe_json_string_html(out, p->program);
    fprintf(out, ",\"device\":");
    pe_json_string_html(out, p->device);
    fprintf(out, ",\"threads\":%" PRIu64 ",\"wall_ns\":%" PRIu64 ",\"n_events\":%u,\n\"kinds\":[", p->threads, p->wall_ns,
            p->n_events);
    for (int k = 0; k < PE_EV__COUNT; k++) fprintf(out, "%s\"%s\"", k ? "," : "", pe_prof_event_name(k));
    fprintf(out, "],\n\"tracks\":[");
    for (uint32_t t = 0; t < p->n_tracks; t++) {
        if (t) fputc(',', out);
        pe_json_string_html(out, p->tracks[t]);
    }
    fprintf(out, "],\n\"kernels\":[");
    for (uint32_t k = 0; k < p->n_kernels; k++) {
        if (k) fputc(',', out);
        pe_json_string_html(out, p->kernels[k].name);
    }
    /* events: [kind, track, start_ns, dur_ns, ref, bytes] */
    fprintf(out, "],\n\"events\":[");
    for (uint32_t i = 0; i < p->n_events && i < MAX_PAGE_EVENTS; i++) {
        const pe_prof_event *e = &p->events[i];
        fprintf(out, "%s[%u,%u,%" PRIu64 ",%" PRIu64 ",%" PRId64 ",%" PRIu64 "]", i ? ",\n" : "", e->kind, e->track,
                e->start_ns, e->dur_ns, e->ref, e->bytes);
    }
    /* lines: [label, compute_ns, direct_ns, stored_unread_bytes] */
    fprintf(out, "],\n\"lines\":[");
    pe_prof_row *rows;
    long n = pe_prof_rows(p, PE_BY_LINE, &rows);
    for (long i = 0; i < n && i < MAX_PAGE_LINES; i++) {
        fprintf(out, "%s[", i ? ",\n" : "");
        pe_json_string_html(out, rows[i].label);
        fprintf(out, ",%.0f,%.0f,%" PRIu64 "]", rows[i].compute_ns, rows[i].direct_ns, rows[i].stored_unread_bytes);
    }
    if (n >= 0) free(rows);
    fprintf(out, "]};\n");
    fputs(page_script, out);
}
