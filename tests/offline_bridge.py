#!/usr/bin/env python3
"""The two halves of the bridge that lets a coding CLI in a network namespace of its own reach the
loopback fake of its model API, and nothing else (tests/exec_cli_offline_test.cpp).

  unix-listen SOCKET PORT LOG     host side: accepts on the unix socket SOCKET (in a directory the
                                  sandbox sees read-only) and forwards each connection to
                                  127.0.0.1:PORT (the fake); one line per connection in LOG.
  tcp-listen PORT SOCKET READY    sandbox side: listens on 127.0.0.1:PORT of the sandbox's own,
                                  empty loopback and forwards each connection to SOCKET; creates
                                  the file READY once it listens; exits when its parent (the CLI it
                                  was started for, after the wrapper's exec) goes.
  probe PORT                      prints, as JSON, what the network looks like from here: the
                                  interfaces, a connection to an outside address, one to
                                  127.0.0.1:PORT (where the fake listens on the host's loopback),
                                  and a DNS lookup. Each result is "connected"/"resolved" or the
                                  error's name.
"""
import errno
import json
import os
import socket
import sys
import threading


def pump(src, dst):
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            dst.sendall(data)
    except OSError:
        pass
    finally:
        try:
            dst.shutdown(socket.SHUT_WR)
        except OSError:
            pass


def relay(client, connect):
    try:
        upstream = connect()
    except OSError:
        client.close()
        return
    back = threading.Thread(target=pump, args=(upstream, client), daemon=True)
    back.start()
    pump(client, upstream)
    back.join()
    client.close()
    upstream.close()


def connect_tcp(port):
    return socket.create_connection(("127.0.0.1", port))


def connect_unix(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    return s


def unix_listen(path, port, log):
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    # A root daemon's worker runs as nobody (issue 33): it must be able to connect.
    os.chmod(path, 0o666)
    server.listen(64)
    n = 0
    while True:
        client, _ = server.accept()
        n += 1
        with open(log, "a") as f:
            f.write("connection %d\n" % n)
        threading.Thread(target=relay, args=(client, lambda: connect_tcp(port)), daemon=True).start()


def tcp_listen(port, path, ready):
    parent = os.getppid()
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("127.0.0.1", port))
    server.listen(64)
    server.settimeout(0.5)
    open(ready, "w").close()
    while os.getppid() == parent:
        try:
            client, _ = server.accept()
        except socket.timeout:
            continue
        client.settimeout(None)
        threading.Thread(target=relay, args=(client, lambda: connect_unix(path)), daemon=True).start()


def error_name(e):
    if isinstance(e, socket.gaierror):
        return "gaierror %d: %s" % (e.errno, e.strerror)
    return errno.errorcode.get(e.errno, str(e))


def probe(port):
    result = {"interfaces": [name for _, name in socket.if_nameindex()]}
    for key, address in (("outside", ("1.1.1.1", 443)), ("host_fake", ("127.0.0.1", port))):
        try:
            socket.create_connection(address, 2).close()
            result[key] = "connected"
        except OSError as e:
            result[key] = error_name(e)
    try:
        socket.getaddrinfo("api.anthropic.com", 443)
        result["dns"] = "resolved"
    except OSError as e:
        result["dns"] = error_name(e)
    print(json.dumps(result))


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "unix-listen":
        unix_listen(sys.argv[2], int(sys.argv[3]), sys.argv[4])
    elif mode == "tcp-listen":
        tcp_listen(int(sys.argv[2]), sys.argv[3], sys.argv[4])
    elif mode == "probe":
        probe(int(sys.argv[2]))
    else:
        sys.exit("unknown mode " + mode)
