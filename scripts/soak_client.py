#!/usr/bin/env python3
"""A bounded load generator for `attnzoo serve` (scripts/soak-serve.sh runs it): CONNECTIONS
threads, each with one keep-alive connection, send requests back to back for SECONDS: 40 %
translate greedy, 25 % translate beam 5, 25 % encode, 10 % bad requests (malformed JSON, an
empty text, a wrong Content-Type, an unknown field, a wrong route). Prints one JSON line per
MINUTE window (status counts, p50/p99 latency per kind) and a summary line; exits 1 if a 5xx
other than 503 came back, or a bad request got anything but a 4xx.

  scripts/soak_client.py ADDR SECONDS [CONNECTIONS] [MINUTE]
"""

import http.client
import json
import random
import sys
import threading
import time

addr, seconds = sys.argv[1], float(sys.argv[2])
connections = int(sys.argv[3]) if len(sys.argv) > 3 else 16
window = float(sys.argv[4]) if len(sys.argv) > 4 else 60.0
host, port = addr.rsplit(":", 1)

SENTENCES = [
    "Die Katze schläft hier.",
    "Der Hund läuft heute. Das Kind isst oft.",
    "Wo ist der Bahnhof?",
    "Ich habe Hunger und möchte etwas essen.",
]
ENGLISH = ["The cat sleeps here.", "Where is the station?", "A dog runs in the park today."]
BAD = [
    ("/api/translate", "application/json", b'{"text": "Hallo'),
    ("/api/translate", "application/json", b'{"text": ""}'),
    ("/api/encode", "text/plain", b'{"text": "x"}'),
    ("/api/translate", "application/json", b'{"text": "x", "colour": 1}'),
    ("/api/nothing", "application/json", b'{"text": "x"}'),
    ("/api/translate", "application/json", b'{"text": "x", "beam": 1e400}'),
]

lock = threading.Lock()
records = []  # (finish time, kind, status, seconds)
start = time.monotonic()
deadline = start + seconds


def request(rng):
    roll = rng.random()
    if roll < 0.40:
        body = {"text": rng.choice(SENTENCES), "beam": 1}
        return "greedy", "/api/translate", "application/json", json.dumps(body).encode()
    if roll < 0.65:
        body = {"text": rng.choice(SENTENCES), "beam": 5}
        return "beam5", "/api/translate", "application/json", json.dumps(body).encode()
    if roll < 0.90:
        body = {"text": rng.choice(ENGLISH)}
        return "encode", "/api/encode", "application/json", json.dumps(body).encode()
    path, kind, body = rng.choice(BAD)
    return "bad", path, kind, body


def worker(seed):
    rng = random.Random(seed)
    conn = None
    previous = None  # the last answer on this connection: (kind, status)
    while time.monotonic() < deadline:
        kind, path, ctype, body = request(rng)
        began = time.monotonic()
        try:
            if conn is None:
                conn = http.client.HTTPConnection(host, int(port), timeout=120)
            conn.request("POST", path, body, {"Content-Type": ctype, "Host": "localhost"})
            response = conn.getresponse()
            response.read()
            status = response.status
            if response.getheader("Connection", "").lower() == "close":
                conn.close()
                conn = None
        except (OSError, http.client.HTTPException) as error:
            # Named with the answer before it on the connection: a server that closes a
            # keep-alive connection after an answer without saying so shows here.
            status = "error:%s after %s %s" % ((type(error).__name__,) + (previous or ("-", "-")))
            if conn is not None:
                conn.close()
            conn = None
        previous = (kind, status)
        with lock:
            records.append((time.monotonic() - start, kind, status, time.monotonic() - began))


def percentile(values, p):
    if not values:
        return None
    values = sorted(values)
    return round(values[min(len(values) - 1, int(p / 100 * len(values)))] * 1000, 1)


def summary(rows):
    out = {"requests": len(rows), "status": {}}
    for _, _, status, _ in rows:
        out["status"][str(status)] = out["status"].get(str(status), 0) + 1
    for kind in ["greedy", "beam5", "encode", "bad"]:
        latencies = [s for _, k, st, s in rows if k == kind and st == 200 or k == kind == "bad"]
        out[kind] = {"n": len(latencies), "p50_ms": percentile(latencies, 50), "p99_ms": percentile(latencies, 99)}
    return out


threads = [threading.Thread(target=worker, args=(i,), daemon=True) for i in range(connections)]
for thread in threads:
    thread.start()
reported = 0
while any(thread.is_alive() for thread in threads):
    time.sleep(1)
    now = time.monotonic() - start
    while now >= (reported + 1) * window:
        with lock:
            rows = [r for r in records if reported * window <= r[0] < (reported + 1) * window]
        print(json.dumps({"window_s": [reported * window, (reported + 1) * window], **summary(rows)}), flush=True)
        reported += 1
for thread in threads:
    thread.join()
total = summary(records)
bad = [r for r in records if r[1] == "bad" and not (isinstance(r[2], int) and 400 <= r[2] < 500)]
fives = [r for r in records if isinstance(r[2], int) and r[2] >= 500 and r[2] != 503]
errors = [r for r in records if not isinstance(r[2], int)]
print(json.dumps({"total": total, "seconds": seconds, "connections": connections,
                  "bad_not_4xx": len(bad), "5xx_not_503": len(fives), "connection_errors": len(errors)}), flush=True)
sys.exit(1 if bad or fives or errors else 0)
