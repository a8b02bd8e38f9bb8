#!/usr/bin/env python3
"""A PostgreSQL that becomes ready between a worker's failed connection attempt and the PQping
with which the worker classifies the failure, every time, for tests/cli/worker_cli.sh: odd
connections are refused as the server refuses them while it starts (FATAL, SQLSTATE 57P03,
"the database system is starting up"), even ones (the worker's PQping) get a password request,
which PQping takes for a server that is up. A worker must go on waiting (a server starting up),
not exit as for a refused login.

Usage: starting_pg.py DIR   listens on DIR/.s.PGSQL.5432; prints "listening" when it does.
"""
import os
import socket
import struct
import sys

path = os.path.join(sys.argv[1], ".s.PGSQL.5432")
os.makedirs(sys.argv[1], exist_ok=True)
server = socket.socket(socket.AF_UNIX)
server.bind(path)
server.listen(16)
print("listening", flush=True)
n = 0
while True:
    conn, _ = server.accept()
    n += 1
    with conn:
        head = conn.recv(4)
        if len(head) == 4:
            conn.recv(struct.unpack("!i", head)[0] - 4)  # the startup packet
        if n % 2:
            fields = b"SFATAL\0VFATAL\0C57P03\0Mthe database system is starting up\0\0"
            conn.sendall(b"E" + struct.pack("!i", len(fields) + 4) + fields)
        else:
            conn.sendall(b"R" + struct.pack("!ii", 8, 3))  # AuthenticationCleartextPassword
