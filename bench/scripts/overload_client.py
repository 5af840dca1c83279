#!/usr/bin/env python3
"""Overload client for bench/scripts/overload.sh: N streams opened at once against a kvroute router,
each classified by what the client saw. Standard library only; loopback only; every socket has a
deadline, so the run ends by itself.

Usage: overload_client.py HOST PORT N MAX_TOKENS DEADLINE_S [priority-header-value]
Prints one JSON object: counts by outcome, head latencies, and the checks the issue asks for.
"""
import asyncio
import json
import sys
import time


async def one(host, port, i, max_tokens, deadline, results, priority):
    body = json.dumps({"model": "kvroute/mock-llm", "messages": [{"role": "user", "content": f"overload {i} " * 8}],
                       "max_tokens": max_tokens, "ignore_eos": True, "stream": True}).encode()
    head = (f"POST /v1/chat/completions HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n")
    if priority is not None:
        head += f"x-kvroute-priority: {priority}\r\n"
    t0 = time.monotonic()
    r = {"i": i}
    try:
        reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port), 10)
        writer.write(head.encode() + b"\r\n" + body)
        await writer.drain()
        status_line = await asyncio.wait_for(reader.readline(), deadline)
        r["head_s"] = time.monotonic() - t0
        r["status"] = int(status_line.split()[1]) if status_line else 0
        headers = {}
        while True:
            line = await asyncio.wait_for(reader.readline(), deadline)
            if line in (b"\r\n", b""):
                break
            k, _, v = line.decode().partition(":")
            headers[k.strip().lower()] = v.strip()
        raw = await asyncio.wait_for(reader.read(), deadline)
        writer.close()
        r["end_s"] = time.monotonic() - t0
        if headers.get("transfer-encoding") == "chunked":
            out, pos, complete = b"", 0, False
            while True:
                nl = raw.find(b"\r\n", pos)
                if nl < 0:
                    break
                size = int(raw[pos:nl].split(b";")[0], 16)
                if size == 0:
                    complete = True
                    break
                out += raw[nl + 2:nl + 2 + size]
                pos = nl + 2 + size + 2
            text = out.decode(errors="replace")
        else:
            text = raw.decode(errors="replace")
            complete = len(raw) == int(headers.get("content-length", "-1"))
        r["retry_after"] = headers.get("retry-after")
        r["json_error"] = headers.get("content-type", "").startswith("application/json") and '"error"' in text
        r["tokens"] = text.count('"delta":{"content"')
        r["done"] = complete and text.endswith("data: [DONE]\n\n")
        r["sse_error"] = 'data: {"error"' in text
    except Exception as e:  # noqa: BLE001 - every failure is a result here
        r["status"] = r.get("status", 0)
        r["exception"] = type(e).__name__
        r["end_s"] = time.monotonic() - t0
    results.append(r)


async def main():
    host, port, n, max_tokens, deadline = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])
    priority = sys.argv[6] if len(sys.argv) > 6 else None
    results = []
    t0 = time.monotonic()
    await asyncio.gather(*(one(host, port, i, max_tokens, deadline, results, priority) for i in range(n)))
    by = {}
    for r in results:
        if r.get("exception"):
            k = "exception_" + r["exception"]
        elif r["status"] == 200 and r["done"] and r["tokens"] > 0 and not r["sse_error"]:
            k = "200_complete"
        elif r["status"] == 200 and r["tokens"] == 0:
            k = "200_without_token"
        elif r["status"] == 200:
            k = "200_sse_error" if r["sse_error"] else "200_incomplete"
        else:
            k = f"{r['status']}" + ("_retry_after" if r.get("retry_after") else "_no_retry_after") + \
                ("_json" if r.get("json_error") else "_no_json")
        by[k] = by.get(k, 0) + 1
    refused = [r for r in results if r.get("status") in (429, 503)]
    print(json.dumps({
        "streams": n,
        "wall_s": round(time.monotonic() - t0, 2),
        "outcomes": by,
        "refused_head_s_max": round(max((r["head_s"] for r in refused), default=0), 3),
        "refused_429_head_s_max": round(max((r["head_s"] for r in refused if r["status"] == 429), default=0), 3),
        "refused_503_head_s_max": round(max((r["head_s"] for r in refused if r["status"] == 503), default=0), 3),
        "complete_end_s_max": round(max((r["end_s"] for r in results if r.get("status") == 200), default=0), 3),
    }, sort_keys=True))


asyncio.run(main())
