#!/usr/bin/env python3
"""check_trace_json.py FILE — validates a pe-prof trace export against the
Chrome Trace Event format's required fields: a traceEvents array; every event
with name, ph, pid, tid; complete events (ph X) with numeric ts and dur >= 0;
metadata events (ph M) naming the process and every thread an event uses;
and at least one kernel event."""
import json
import sys

with open(sys.argv[1]) as f:
    doc = json.load(f)
events = doc["traceEvents"]
assert isinstance(events, list) and events, "traceEvents must be a non-empty array"
named_threads, used_threads, kernels = set(), set(), 0
process_named = False
for e in events:
    for field in ("name", "ph", "pid", "tid"):
        assert field in e, f"event without {field}: {e}"
    assert isinstance(e["name"], str) and isinstance(e["pid"], int) and isinstance(e["tid"], int), e
    if e["ph"] == "M":
        assert isinstance(e.get("args", {}).get("name", e.get("args", {}).get("sort_index")), (str, int)), e
        if e["name"] == "thread_name":
            named_threads.add(e["tid"])
        if e["name"] == "process_name":
            process_named = True
    elif e["ph"] == "X":
        assert isinstance(e["ts"], (int, float)) and e["ts"] >= 0, e
        assert isinstance(e["dur"], (int, float)) and e["dur"] >= 0, e
        assert isinstance(e.get("cat", ""), str), e
        used_threads.add(e["tid"])
        kernels += e.get("cat") == "kernel"
    else:
        raise AssertionError(f"unexpected phase {e['ph']}")
assert process_named, "no process_name metadata"
assert used_threads <= named_threads, f"threads without a name: {used_threads - named_threads}"
assert kernels > 0, "no kernel events"
print(f"trace ok: {len(events)} events, {kernels} kernels, {len(named_threads)} threads")
