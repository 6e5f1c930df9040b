#!/usr/bin/env python3
"""The load of scripts/soak-serve.sh: `hey` (Debian's package) against `attnzoo serve` for
MINUTES one-minute rounds, four streams at once on keep-alive connections, 16 in all:
translate greedy (6 connections), translate beam 5 (5), encode (4) and bad requests (1
connection, paced to about 10 % of the requests: 1/9 of the previous minute's good requests per
second; a different bad request each minute, from malformed JSON to a wrong route). Prints one JSON line per minute: per stream the requests,
status counts, connection errors and p50/p99 latency in ms. Exits 1 if any answer was a 5xx
other than 503 (the bounded queue), a good request got a 4xx, or a bad one anything but a 4xx.

  scripts/soak_client.py ADDR MINUTES
"""

import json
import re
import subprocess
import sys
import tempfile

addr, minutes = sys.argv[1], int(sys.argv[2])
url = f"http://{addr}"

GOOD = {
    "greedy": (6, "/api/translate", '{"text": "Der Hund läuft heute. Das Kind isst oft.", "beam": 1}'),
    "beam5": (5, "/api/translate", '{"text": "Ich habe Hunger und möchte etwas essen.", "beam": 5}'),
    "encode": (4, "/api/encode", '{"text": "Where is the station?"}'),
}
BAD = [
    ("/api/translate", "application/json", '{"text": "Hallo'),
    ("/api/translate", "application/json", '{"text": ""}'),
    ("/api/encode", "text/plain", '{"text": "x"}'),
    ("/api/translate", "application/json", '{"text": "x", "colour": 1}'),
    ("/api/nothing", "application/json", '{"text": "x"}'),
    ("/api/translate", "application/json", '{"text": "x", "beam": 1e400}'),
]


def hey(connections, path, content_type, body, rate=None):
    """A `hey -z 60s` run in the background, its summary going to a temporary file."""
    out = tempfile.TemporaryFile(mode="w+")
    args = ["hey", "-z", "60s", "-c", str(connections), "-m", "POST", "-T", content_type, "-d", body]
    if rate:
        args += ["-q", str(rate)]
    return subprocess.Popen(args + [url + path], stdout=out, stderr=subprocess.STDOUT), out


def summary(out):
    """Requests, status counts, connection errors, p50 and p99 (ms) of a hey summary."""
    out.seek(0)
    text = out.read()
    statuses = {code: int(n) for code, n in re.findall(r"\[(\d{3})\]\s+(\d+) responses", text)}
    errors = sum(int(n) for n in re.findall(r"\[(\d+)\]\s+(?:Post|Get|dial)", text))
    latency = {p: round(float(s) * 1000, 1) for p, s in re.findall(r"(\d+)% in ([\d.]+) secs", text)}
    return {"requests": sum(statuses.values()), "status": statuses, "errors": errors,
            "p50_ms": latency.get("50"), "p99_ms": latency.get("99")}


failed = False
bad_rate = 2.0
for minute in range(minutes):
    bad_path, bad_type, bad_body = BAD[minute % len(BAD)]
    runs = {name: hey(c, path, "application/json", body) for name, (c, path, body) in GOOD.items()}
    runs["bad"] = hey(1, bad_path, bad_type, bad_body, rate=bad_rate)
    line = {"minute": minute + 1}
    for name, (process, out) in runs.items():
        process.wait()
        line[name] = summary(out)
        for code in line[name]["status"]:
            server_error = code.startswith("5") and code != "503"
            wrong = code.startswith("4") if name != "bad" else not code.startswith("4")
            failed |= server_error or wrong
    print(json.dumps(line), flush=True)
    good = sum(line[name]["requests"] for name in GOOD)
    bad_rate = max(0.1, round(good / 60 / 9, 1))
sys.exit(1 if failed else 0)
