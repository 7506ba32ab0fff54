#!/usr/bin/env python3
"""Writes each fuzz target's seed corpus into OUT/<target>/ (cmake/dev.sh fuzz calls it).

Seeds are the recorded payloads the tests already use — @octokit/webhooks-examples and
@octokit/fixtures (tests/node_modules, after `npm ci`), tests/testdata, config/ — plus the small
hand-written seeds and crash inputs committed in fuzz/corpus/<target>/. Nothing generated here
is committed: the working corpus lives in the build directory.

usage: seeds.py ROOT OUT
"""
import hashlib
import json
import pathlib
import shutil
import struct
import sys

root = pathlib.Path(sys.argv[1])
out = pathlib.Path(sys.argv[2])
MAX_SEED = 64 * 1024  # libFuzzer's -max_len is taken from the corpus: keep the seeds modest


def put(target, data):
    if isinstance(data, str):
        data = data.encode()
    if len(data) > MAX_SEED:
        return
    d = out / target
    d.mkdir(parents=True, exist_ok=True)
    (d / hashlib.sha1(data).hexdigest()).write_bytes(data)


def dumps(j):
    return json.dumps(j, ensure_ascii=False, separators=(",", ":"))


# Committed seeds (hand-written shapes and every crash input found so far).
for d in sorted((root / "fuzz" / "corpus").glob("*")):
    for f in sorted(d.iterdir()):
        put(d.name, f.read_bytes())

# GitHub: every example webhook payload, as a delivery and as objects to normalize.
octokit = root / "tests" / "node_modules" / "@octokit"
index = octokit / "webhooks-examples" / "api.github.com" / "index.json"
if index.exists():
    taken = {"issue_comment", "issues", "pull_request", "pull_request_review",
             "pull_request_review_comment", "workflow_run", "check_run", "ping"}
    for event in json.loads(index.read_text()):
        if event["name"] not in taken:
            continue
        for example in event["examples"]:
            put("github_webhook_fuzz", event["name"] + "\n" + dumps(example))
            put("github_normalize_fuzz", dumps(example))
            for key in ("comment", "issue", "pull_request", "review", "workflow_run", "check_run"):
                if isinstance(example.get(key), dict):
                    put("github_rest_fuzz", dumps([example[key]]))
else:
    print("seeds.py: tests/node_modules missing (cd tests && npm ci): GitHub seeds are the committed ones only",
          file=sys.stderr)
scenarios = octokit / "fixtures" / "scenarios" / "api.github.com"
for name in ("paginate-issues", "search-issues", "get-repository", "labels", "mark-notifications-as-read"):
    f = scenarios / name / "normalized-fixture.json"
    if not f.exists():
        continue
    for call in json.loads(f.read_text()):
        body = call.get("response")
        if isinstance(body, (list, dict)):
            put("github_rest_fuzz", dumps(body))
            put("github_normalize_fuzz", dumps(body))

# Config and policy files the tests read, and the shipped examples.
for f in sorted((root / "tests" / "testdata" / "config").glob("*.yaml")) + sorted((root / "config").glob("*.yaml")):
    put("policy_yaml_fuzz" if "policy" in f.name else "config_fuzz", f.read_bytes())
for f in sorted((root / "tests" / "testdata" / "policy").glob("*.yaml")):
    put("policy_yaml_fuzz", f.read_bytes())


# Feishu long-connection frames, encoded by hand (pbbp2.Frame, proto2 wire format).
def varint(n):
    b = bytearray()
    n &= (1 << 64) - 1
    while True:
        byte = n & 0x7F
        n >>= 7
        b.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(b)


def field(num, wire, payload):
    key = varint(num << 3 | wire)
    if wire == 0:
        return key + varint(payload)
    return key + varint(len(payload)) + payload


def frame(seq, method, headers, payload=None):
    b = field(1, 0, seq) + field(2, 0, 7) + field(3, 0, 33) + field(4, 0, method)
    for k, v in headers:
        b += field(5, 2, field(1, 2, k.encode()) + field(2, 2, v.encode()))
    if payload is not None:
        b += field(8, 2, payload.encode())
    return b


sample_events = [f.read_bytes() for f in sorted((root / "fuzz" / "corpus" / "feishu_normalize_fuzz").glob("*"))]
put("feishu_frames_fuzz", frame(1, 0, [("type", "ping"), ("service_id", "33")]))
put("feishu_frames_fuzz", frame(2, 0, [("type", "pong")], '{"PingInterval":90,"ReconnectCount":-1}'))
for i, e in enumerate(sample_events):
    text = e.decode(errors="replace")
    put("feishu_frames_fuzz", frame(10 + i, 1, [("type", "event"), ("message_id", "m%d" % i), ("sum", "1"),
                                                 ("seq", "0"), ("trace_id", "t")], text))
    half = len(text) // 2
    put("feishu_frames_fuzz", frame(20 + i, 1, [("type", "event"), ("message_id", "s%d" % i), ("sum", "2"),
                                                 ("seq", "1")], text[half:]))
    # the callback target: even first byte = plaintext to encrypt and sign, odd = raw body
    put("feishu_callback_fuzz", b"\x00" + e)
    put("feishu_callback_fuzz", b"\x01" + dumps({"encrypt": "not base64 ☃"}).encode())

# The HTTP client: the first byte picks the parser (0 a URL, 1 a proxy variable, 2 a response
# head), the rest is its input; shapes the tests use and the ones a peer could send.
for url in ["https://api.github.com/repos/o/r/issues?page=2&per_page=100", "http://127.0.0.1:8080/x",
            "https://[::1]:8443/a%20b", "https://user:p%40ss@example.com/", "https://例子.测试/路径?q=😀",
            "http://h:0/", "http://h:65536/", "file:///etc/passwd", "https://a b/", "http://h/\r\nX: y"]:
    put("http_client_fuzz", b"\x00" + url.encode())
for proxy in ["http://proxy:3128", "proxy:3128", "http://us%65r:p%40ss@[::1]:8080/", "socks5://h:1080", "*",
              "example.com, .internal:443, [::1]", "http://:80", "https://proxy:443"]:
    put("http_client_fuzz", b"\x01" + proxy.encode())
for head in [b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nLink: <https://x/?page=2>; rel=\"next\"\r\n"
             b"Set-Cookie: a=1\r\nSet-Cookie: b=2\r\n\r\n",
             b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\nX-Id: \xe6\xb1\x89\xff\r\n\r\n",
             b"HTTP/1.1 200 OK\r\nBad Name: v\r\nno-colon\r\n:empty\r\nX: a\rb\r\n\r\n"]:
    put("http_client_fuzz", b"\x02" + head)

# The worker endpoints' JSON (issue 36): an announcement, a lease, a heartbeat, a return.
lease_id = "a" * 64
for body in [{"worker": "gpu-box_1", "executors": ["claude-code", "codex"], "slots": 2},
             {"worker": "工作机", "executors": ["Codex"], "slots": 0},
             {"lease": lease_id, "offer": 1, "attempt": 1,
              "turn": {"assignment": 10, "ticket": 1, "executor": "claude-code",
                       "task": {"request_text": "修一下 README"}, "code": "IyB2MiBnaXQgYnVuZGxlCg=="}},
             {"worker": "w", "lease": lease_id},
             {"worker": "w", "lease": lease_id, "report": {"stage": "ready", "summary": "ok"}, "bundle": "AAEC/w=="},
             {"worker": "w", "lease": lease_id, "report": None, "bundle": "%%%"},
             {"worker": "gpu-box.01", "join_token": "join-令牌-0123456789"},
             {"worker": "w", "join_token": ""},
             {"worker": "w", "lease": lease_id, "events": [
                 {"kind": "assistant", "body": {"role": "assistant", "content": "读了 README ✅"}},
                 {"kind": "command", "body": {"command": "git diff", "exit_code": 0}}]},
             {"worker": "w", "lease": lease_id, "events": [{"kind": "report", "body": {}}]}]:
    put("worker_wire_fuzz", dumps(body))
