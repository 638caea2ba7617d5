/* export_html.c — one self-contained HTML page for a profile: the data as a
 * JSON object in the page and a small script that draws the summary, the
 * timeline (SVG: one row per track, one box per event), the lines by time
 * (compute, direct and waited side by side, with the bytes each stored that
 * nothing read), where the application waited, and the kernel table.  No
 * outside resources: it opens anywhere.
 *
 * Everything is laid out to fit the page's width: the SVGs take the width
 * of their container, label columns are as wide as their longest label
 * (measured; a label past 40% of the width is shortened, the full text in
 * its tooltip), the time axis's end labels are anchored inside.  When it has
 * drawn, the script checks that: it marks <body> with data-drawn, the counts
 * of what it drew, data-clipped (SVG labels outside their SVG) and
 * data-overflow (pixels the page is wider than the window), which the test
 * reads through headless Chromium. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "export.h"
#include "report.h"
#include "../irformat/json.h"

#define MAX_PAGE_EVENTS 50000 /* keeps the page light; the trace export has them all */
#define MAX_PAGE_LINES 40
#define MAX_PAGE_WAITS 200

static const char page_head[] =
    "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>PE profile</title>\n<style>\n"
    "body{font:13px system-ui,sans-serif;margin:16px;color:#222}\nh1{font-size:18px;margin:0 0 4px}\n"
    "h2{font-size:15px;margin:18px 0 6px}\n.meta{color:#555}\nsvg text{font:11px system-ui,sans-serif}\n"
    "svg{display:block}\n.legend span{display:inline-block;margin-right:12px}\n"
    ".legend i{display:inline-block;width:10px;height:10px;margin-right:4px}\n"
    "table{border-collapse:collapse}\nth,td{padding:2px 8px;text-align:right;border-bottom:1px solid #eee}\n"
    "th{background:#f4f4f4}\ntd.label,th.label{text-align:left;font-family:ui-monospace,monospace;"
    "overflow-wrap:anywhere}\n#summary{margin:0;padding-left:18px}\n</style></head>\n<body>\n"
    "<h1 id=\"title\"></h1><div class=\"meta\" id=\"meta\"></div>\n"
    "<h2>Summary</h2><ul id=\"summary\"></ul>\n"
    "<h2>Timeline</h2><div class=\"legend\" id=\"legend\"></div><div id=\"timeline\"></div>\n"
    "<h2>Time by source line</h2><div class=\"legend\"><span><i style=\"background:#3b7dd8\"></i>compute: kernel "
    "shares</span><span><i style=\"background:#c9a227\"></i>direct: reads, writes, copies</span><span><i "
    "style=\"background:#999\"></i>waited: the application blocked here</span></div><div id=\"lines\"></div>\n"
    "<h2>Where the application waited</h2><table id=\"waits\"><thead><tr><th>waited ms</th><th>waits</th>"
    "<th>per wait ms</th><th class=\"label\">line</th></tr></thead><tbody></tbody></table>\n"
    "<h2>Kernels</h2><table id=\"kernels\"><thead><tr><th>time ms</th><th>%</th><th>runs</th><th>elements</th>"
    "<th>GB/s</th><th>device</th><th>code from</th><th>compile ms</th><th class=\"label\">kernel @ lines</th></tr>"
    "</thead><tbody></tbody></table>\n<script>\n";

static const char page_script[] =
    "const NS='http://www.w3.org/2000/svg';\n"
    "const COLORS={kernel:'#3b7dd8',compile:'#d8843b',proggen:'#9b59b6',to_device:'#2ca02c',to_host:'#17becf',"
    "wait:'#999999',read:'#e377c2',write:'#8c564b'};\n"
    "function el(name,attrs,parent){const e=document.createElementNS(NS,name);"
    "for(const k in attrs)e.setAttribute(k,attrs[k]);if(parent)parent.appendChild(e);return e;}\n"
    "function ms(ns){return (ns/1e6).toFixed(3)+' ms';}\n"
    "function base(l){return l.replace(/^.*\\//,'');}\n"
    "let measure;\n"
    "function textWidth(s){const t=el('text',{},measure);t.textContent=s;const w=t.getComputedTextLength();"
    "measure.removeChild(t);return w;}\n"
    "/* a label in at most w pixels: shortened from the front, the full text in its tooltip */\n"
    "function label(parent,attrs,s,w){const t=el('text',attrs,parent);t.textContent=s;"
    "if(t.getComputedTextLength()>w){let k=s.length;while(k>1&&textWidth('\\u2026'+s.slice(s.length-k))>w)k--;"
    "t.textContent='\\u2026'+s.slice(s.length-k);}el('title',{},t).textContent=s;return t;}\n"
    "function cell(tr,text,cls){const td=document.createElement('td');td.textContent=text;if(cls)td.className=cls;"
    "tr.appendChild(td);return td;}\n"
    "function draw(){\n"
    " measure=el('svg',{width:0,height:0,style:'position:absolute'},document.body);\n"
    " document.getElementById('title').textContent='PE profile: '+D.program;\n"
    " document.getElementById('meta').textContent=D.host+' | '+D.device+' | PE '+D.pe_version+' | '+D.threads+"
    "' threads | wall '+ms(D.wall_ns)+' | '+D.n_events+' events'+(D.events.length<D.n_events?' ('+D.events.length+"
    "' shown)':'')+' | format version '+D.format_version;\n"
    " const S=D.summary,ul=document.getElementById('summary');\n"
    " for(const s of ['kernels '+ms(S.kernel_ns)+' in '+D.kernels.length+' kernels, '+S.runs+' runs',"
    "'the application waited '+ms(S.waited_ns)+' in '+S.waits+' waits','pool utilisation '+S.pool,"
    "'trace cache '+S.trace_hits+'/'+S.trace_lookups+' hits','macro cache '+S.macro,"
    "'kernels compiled '+S.compiled+' ('+ms(S.compile_ns)+')']){const li=document.createElement('li');"
    "li.textContent=s;ul.appendChild(li);}\n"
    " const lg=document.getElementById('legend');\n"
    " for(const k in COLORS){const s=document.createElement('span');s.innerHTML='<i style=\"background:'+COLORS[k]+"
    "'\"></i>'+k;lg.appendChild(s);}\n"
    " /* the timeline: as wide as its container, the track names' column as wide as the longest */\n"
    " const tl=document.getElementById('timeline'),W=Math.max(480,Math.floor(tl.clientWidth)),H=24,top=20,R=8;\n"
    " let L=0;for(const n of D.tracks)L=Math.max(L,textWidth(n));L=Math.ceil(Math.min(L,W*0.4))+12;\n"
    " let end=1;for(const e of D.events)end=Math.max(end,e[2]+e[3]);end=Math.max(end,D.wall_ns);\n"
    " const svg=el('svg',{width:W,height:top+D.tracks.length*H+10},tl);\n"
    " const x=t=>L+(W-L-R)*t/end;\n"
    " for(let i=0;i<=5;i++){const t=end*i/5;el('line',{x1:x(t),x2:x(t),y1:top-4,y2:top+D.tracks.length*H,"
    "stroke:'#ddd'},svg);el('text',{x:x(t),y:12,'text-anchor':i==0?'start':i==5?'end':'middle'},svg).textContent="
    "(t/1e6).toFixed(1)+' ms';}\n"
    " D.tracks.forEach((name,i)=>label(svg,{x:4,y:top+i*H+15},name,L-12));\n"
    " let boxes=0;\n"
    " /* longest first: a kernel run inside a wait on the same thread is drawn over it */\n"
    " const order=D.events.slice().sort((a,b)=>b[3]-a[3]);\n"
    " for(const e of order){const r=el('rect',{x:x(e[2]),y:top+e[1]*H+3,width:Math.max(0.6,x(e[2]+e[3])-x(e[2])),"
    "height:H-6,fill:COLORS[D.kinds[e[0]]]||'#000'},svg);\n"
    "  const k=D.kinds[e[0]],ref=e[4]>=0?(k==='kernel'?D.kernels[e[4]][0]:D.sites[e[4]]):'';\n"
    "  el('title',{},r).textContent=k+(ref?' '+ref:'')+' '+ms(e[3])+(e[5]?' '+e[5]+' bytes':'');boxes++;}\n"
    " /* lines: compute, direct and waited bars; labels and values measured so that all fits */\n"
    " const rows=D.lines,BH=20,lw=document.getElementById('lines'),BW=Math.max(480,Math.floor(lw.clientWidth));\n"
    " const value=r=>{const parts=[['compute',r[1]],['direct',r[2]],['waited',r[3]]].filter(p=>p[1]>0)"
    ".map(p=>p[0]+' '+(p[1]/1e6).toFixed(3));return ms(r[1]+r[2]+r[3])+(parts.length?' ('+parts.join(', ')+')':'')+"
    "(r[6]?', '+(r[6]/1e6).toFixed(3)+' MB stored, never read':'');};\n"
    " let BL=0,VW=0;for(const r of rows)BL=Math.max(BL,textWidth(base(r[0]))),VW=Math.max(VW,textWidth(value(r)));\n"
    " BL=Math.ceil(Math.min(BL,BW*0.3))+12;VW=Math.ceil(Math.min(VW,BW*0.4))+12;\n"
    " const bars=el('svg',{width:BW,height:rows.length*BH+10},lw);\n"
    " const most=rows.length?Math.max(1,rows[0][1]+rows[0][2]+rows[0][3]):1,span=Math.max(40,BW-BL-VW);let drawn=0;\n"
    " rows.forEach((r,i)=>{const y=i*BH+4,t=Math.max(1e-9,r[1]+r[2]+r[3]),w=span*(r[1]+r[2]+r[3])/most;\n"
    "  label(bars,{x:4,y:y+13},base(r[0]),BL-12).firstElementChild.textContent=r[0];\n"
    "  let at=BL;for(const [v,c] of [[r[1],COLORS.kernel],[r[2],'#c9a227'],[r[3],COLORS.wait]]){"
    "const bw=w*v/t;if(bw>0)el('rect',{x:at,y:y,width:Math.max(0.6,bw),height:BH-6,fill:c},bars);at+=bw;}\n"
    "  label(bars,{x:BL+Math.max(w,0.6)+6,y:y+13},value(r),BW-BL-Math.max(w,0.6)-8);drawn++;});\n"
    " /* where the application waited, longest first */\n"
    " const wb=document.querySelector('#waits tbody');\n"
    " for(const r of D.waits){const tr=document.createElement('tr');cell(tr,(r[1]/1e6).toFixed(3));"
    "cell(tr,r[2]);cell(tr,(r[1]/1e6/Math.max(1,r[2])).toFixed(3));cell(tr,r[0],'label');wb.appendChild(tr);}\n"
    " /* kernels, longest first */\n"
    " const kb=document.querySelector('#kernels tbody');let all=0;for(const k of D.kernels)all+=k[3];\n"
    " for(const k of D.kernels.slice().sort((a,b)=>b[3]-a[3])){const tr=document.createElement('tr');\n"
    "  cell(tr,(k[3]/1e6).toFixed(3));cell(tr,(all>0?100*k[3]/all:0).toFixed(1)+'%');cell(tr,k[2]);cell(tr,k[4]);"
    "cell(tr,(k[3]?k[5]/k[3]:0).toFixed(2));cell(tr,k[1]);cell(tr,k[6]);cell(tr,(k[7]/1e6).toFixed(3));"
    "cell(tr,k[0],'label');kb.appendChild(tr);}\n"
    " measure.remove();\n"
    " /* does it fit: every SVG label inside its SVG, the page no wider than the window */\n"
    " let clipped=0;\n"
    " for(const s of document.querySelectorAll('svg')){const sw=+s.getAttribute('width');"
    "for(const t of s.querySelectorAll('text')){const b=t.getBBox();if(b.x<-0.5||b.x+b.width>sw+0.5)clipped++;}}\n"
    " const de=document.documentElement;\n"
    " Object.assign(document.body.dataset,{events:boxes,bars:drawn,kernels:kb.rows.length,waits:wb.rows.length,"
    "clipped:clipped,overflow:Math.max(0,de.scrollWidth-de.clientWidth),drawn:'yes'});\n"
    "}\n"
    "draw();\n</script>\n</body></html>\n";

static int by_wait(const void *a, const void *b)
{
    const pe_prof_row *x = a, *y = b;
    if (x->wait_ns != y->wait_ns) return x->wait_ns < y->wait_ns ? 1 : -1;
    return strcmp(x->label, y->label);
}

static void json_str(FILE *out, const char *key, const char *value)
{
    fprintf(out, ",\"%s\":", key);
    pe_json_string_html(out, value);
}

void pe_prof_export_html(const pe_profile *p, FILE *out)
{
    fputs(page_head, out);
    fprintf(out, "const D={\"program\":");
    pe_json_string_html(out, p->program);
    json_str(out, "host", p->host);
    json_str(out, "device", p->device);
    json_str(out, "pe_version", p->pe_version);
    fprintf(out, ",\"format_version\":%u,\"threads\":%" PRIu64 ",\"wall_ns\":%" PRIu64 ",\"n_events\":%u,\n",
            p->format_version, p->threads, p->wall_ns, p->n_events);

    /* summary: the text report's figures */
    uint64_t kernel_ns = 0, runs = 0, waited_ns = 0, waits = 0;
    for (uint32_t k = 0; k < p->n_kernels; k++) kernel_ns += p->kernels[k].time_ns, runs += p->kernels[k].executions;
    for (uint32_t i = 0; i < p->n_sites; i++) waited_ns += p->sites[i].wait_ns, waits += p->sites[i].waits;
    char pool[160], macro[160];
    pe_prof_pool_utilisation(p, pool, sizeof pool);
    pe_prof_macro_cache(p, macro, sizeof macro);
    fprintf(out, "\"summary\":{\"kernel_ns\":%" PRIu64 ",\"runs\":%" PRIu64 ",\"waited_ns\":%" PRIu64 ",\"waits\":%" PRIu64
                 ",\"trace_hits\":%" PRIu64 ",\"trace_lookups\":%" PRIu64 ",\"compiled\":%" PRIu64
                 ",\"compile_ns\":%" PRIu64,
            kernel_ns, runs, waited_ns, waits, pe_profile_counter(p, "trace_hits"), pe_profile_counter(p, "trace_lookups"),
            pe_profile_counter(p, "kernels_compiled"), pe_profile_counter(p, "compile_ns"));
    json_str(out, "pool", pool);
    json_str(out, "macro", macro);
    fprintf(out, "},\n\"kinds\":[");
    for (int k = 0; k < PE_EV__COUNT; k++) fprintf(out, "%s\"%s\"", k ? "," : "", pe_prof_event_name(k));
    fprintf(out, "],\n\"tracks\":[");
    for (uint32_t t = 0; t < p->n_tracks; t++) {
        if (t) fputc(',', out);
        pe_json_string_html(out, p->tracks[t]);
    }
    /* sites by index, "file:line" (what a wait, read or write event refers to) */
    fprintf(out, "],\n\"sites\":[");
    for (uint32_t i = 0; i < p->n_sites; i++) {
        char site[320];
        snprintf(site, sizeof site, "%s:%lld", p->sites[i].file, (long long)p->sites[i].line);
        if (i) fputc(',', out);
        pe_json_string_html(out, site);
    }
    /* kernels by index: [label, device, runs, time_ns, elements, bytes, code from, compile_ns] */
    fprintf(out, "],\n\"kernels\":[");
    for (uint32_t k = 0; k < p->n_kernels; k++) {
        const pe_prof_kernel *r = &p->kernels[k];
        char label[sizeof ((pe_prof_row *)0)->label]; /* as the --by kernel table has it */
        pe_prof_kernel_label(p, r, label, sizeof label);
        fprintf(out, "%s[", k ? ",\n" : "");
        pe_json_string_html(out, label);
        fputc(',', out);
        pe_json_string_html(out, r->device);
        fprintf(out, ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",\"%s\",%" PRIu64 "]", r->executions, r->time_ns,
                r->elements, r->bytes_read + r->bytes_written, pe_prof_served_name((int)r->served), r->compile_ns);
    }
    /* events: [kind, track, start_ns, dur_ns, ref, bytes] */
    fprintf(out, "],\n\"events\":[");
    for (uint32_t i = 0; i < p->n_events && i < MAX_PAGE_EVENTS; i++) {
        const pe_prof_event *e = &p->events[i];
        fprintf(out, "%s[%u,%u,%" PRIu64 ",%" PRIu64 ",%" PRId64 ",%" PRIu64 "]", i ? ",\n" : "", e->kind, e->track,
                e->start_ns, e->dur_ns, e->ref, e->bytes);
    }
    /* lines, by total: [label, compute_ns, direct_ns, wait_ns, waits, calls, stored_unread_bytes] */
    fprintf(out, "],\n\"lines\":[");
    pe_prof_row *rows;
    long n = pe_prof_rows(p, PE_BY_LINE, &rows);
    for (long i = 0; i < n && i < MAX_PAGE_LINES; i++) {
        fprintf(out, "%s[", i ? ",\n" : "");
        pe_json_string_html(out, rows[i].label);
        fprintf(out, ",%.0f,%.0f,%.0f,%" PRIu64 ",%" PRIu64 ",%" PRIu64 "]", rows[i].compute_ns, rows[i].direct_ns,
                rows[i].wait_ns, rows[i].waits, rows[i].calls, rows[i].stored_unread_bytes);
    }
    /* waits, longest first: [label, wait_ns, waits] */
    fprintf(out, "],\n\"waits\":[");
    if (n > 0) qsort(rows, (size_t)n, sizeof *rows, by_wait);
    for (long i = 0; i < n && i < MAX_PAGE_WAITS && rows[i].waits; i++) {
        fprintf(out, "%s[", i ? ",\n" : "");
        pe_json_string_html(out, rows[i].label);
        fprintf(out, ",%.0f,%" PRIu64 "]", rows[i].wait_ns, rows[i].waits);
    }
    if (n >= 0) free(rows);
    fprintf(out, "]};\n");
    fputs(page_script, out);
}
