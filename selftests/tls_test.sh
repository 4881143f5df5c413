#!/bin/bash
# TLS over rdmasock (TAP): unchanged TLS servers and clients through rdmasock-run.  Each test
# checks the application's own result (the bytes, both ways where the protocol has two, and that
# TLS carried them) and the module's counters: RDMA connections and no fallback.  Python's ssl on
# an accepted socket (it asks SO_TYPE), openssl s_server/s_client both ways, nginx + curl over
# HTTPS, PostgreSQL with ssl=on and psql (sslmode=require); last, a TLS client under the shim of a
# TLS server without it (one fallback, no RDMA).
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
rsrun=$top/build/userlib/rdmasock-run
addr=${RDMASOCK_ADDR:?run inside the VM}
work=$(mktemp -d /tmp/rdmasock-tls.XXXXXX)
chmod 755 "$work"	# nginx workers and the postgres user read below it
n=0 pass=0 fail=0
pids=()
# shellcheck source=selftests/tap.sh
. "$top/selftests/tap.sh"
trap 'stop_all; rm -rf "$work"' EXIT
# Every program runs within a time limit (a hung peer fails its test, it does not hang the run):
# "${lim[@]}" PROGRAM, and "${shim[@]}" PROGRAM under rdmasock-run.
lim=(timeout -k 5 120)
shim=("${lim[@]}" "$rsrun" -q --)

# reap PID: the exit status of a background server that ends by itself (bounded by its limit),
# which then leaves pids.
reap() {
	local p=$1 q st keep=()
	wait "$p"
	st=$?
	for q in "${pids[@]}"; do [ "$q" = "$p" ] || keep+=("$q"); done
	pids=("${keep[@]}")
	return "$st"
}

echo "TAP version 13"
head -c 24M /dev/urandom > "$work/blob"
head -c 4M "$work/blob" > "$work/payload"
# One self-signed certificate, its own CA, for this VM's address (clients verify it where they can).
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 \
	-subj /CN=rdmasock-tls-test -addext "subjectAltName=IP:$addr" \
	-keyout "$work/key.pem" -out "$work/cert.pem" > "$work/req.log" 2>&1 ||
	{ not_ok "a self-signed certificate" "$(tail -n 3 "$work/req.log")"; tap_end; exit; }

# tls.py server|client ADDR PORT CERT [KEY] PAYLOAD: one TLS connection; the client sends the
# payload, the server checks it and sends it back reversed, the client checks that, and both
# close with close_notify each way.  Exit status 0 when every byte was right.
cat > "$work/tls.py" <<'PY'
import socket, ssl, sys

def recv_exact(s, n):
    buf = bytearray()
    while len(buf) < n:
        b = s.recv(min(n - len(buf), 1 << 20))
        if not b:
            sys.exit(f'{sys.argv[1]}: EOF after {len(buf)} of {n} bytes')
        buf += b
    return bytes(buf)

role, addr, port, cert = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
with open(sys.argv[-1], 'rb') as f:
    data = f.read()
if role == 'server':
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, sys.argv[5])
    with socket.create_server((addr, port)) as ls:
        ls.settimeout(100)
        conn, _ = ls.accept()
    conn.settimeout(100)
    # Python's ssl refuses a socket whose SO_TYPE is not SOCK_STREAM ("only stream sockets").
    with ctx.wrap_socket(conn, server_side=True) as tls:
        if recv_exact(tls, len(data)) != data:
            sys.exit('server: the payload arrived changed')
        tls.sendall(data[::-1])
        if tls.recv(1) != b'':
            sys.exit('server: bytes after the payload')
        print('server:', tls.version(), tls.cipher()[0])
        tls.unwrap()
else:
    ctx = ssl.create_default_context(cafile=cert)
    with socket.create_connection((addr, port), timeout=100) as raw:
        with ctx.wrap_socket(raw, server_hostname=addr) as tls:
            tls.sendall(data)
            if recv_exact(tls, len(data)) != data[::-1]:
                sys.exit('client: the payload came back changed')
            print('client:', tls.version(), tls.cipher()[0])
            tls.unwrap()
PY

# py_tls_pair shim|lim PORT TAG: tls.py's server (under the shim, or not) and its client under
# the shim, 4 MiB each way; st is the client's status, or 1 if the server failed.  Logs:
# $work/TAG-server.log, $work/TAG-client.log.
py_tls_pair() {
	local -n wrap=$1
	local spid

	"${wrap[@]}" python3 "$work/tls.py" server "$addr" "$2" "$work/cert.pem" "$work/key.pem" \
		"$work/payload" > "$work/$3-server.log" 2>&1 &
	spid=$!
	pids+=("$spid")
	wait_port "$2"
	"${shim[@]}" python3 "$work/tls.py" client "$addr" "$2" "$work/cert.pem" "$work/payload" \
		> "$work/$3-client.log" 2>&1
	st=$?
	reap "$spid" || st=1
}

# 1. Python's ssl both ends: the server wraps an accepted socket, 4 MiB each way.
begin
py_tls_pair shim 4431 py
grep '^client:' "$work/py-client.log" | sed 's/^/# /'
check "python ssl: server on an accepted socket, client, 4 MiB each way" 2 0 $st \
	"$work/py-server.log" "$work/py-client.log"
stop_all

# 2. openssl s_client uploads 4 MiB to s_server, which writes what it reads to stdout.  Its stdin
# (what it would send) is a FIFO that we hold open and never write: at EOF it would hang up.
begin
mkfifo "$work/fifo"
exec 7<> "$work/fifo"
"${shim[@]}" openssl s_server -quiet -naccept 1 -accept "$addr:4432" -cert "$work/cert.pem" \
	-key "$work/key.pem" <&7 > "$work/s_server.out" 2> "$work/s_server.log" &
spid=$!
pids+=("$spid")
exec 7>&-
wait_port 4432
# -no_ign_eof: close (close_notify) at the payload's end; -nocommands: no byte is a command.
"${shim[@]}" openssl s_client -quiet -no_ign_eof -nocommands -verify_return_error \
	-CAfile "$work/cert.pem" -verify_ip "$addr" -connect "$addr:4432" \
	< "$work/payload" > /dev/null 2> "$work/s_client.log"
st=$?
reap "$spid" || st=1
cmp -s "$work/s_server.out" "$work/payload" || st=1
check "openssl s_client to s_server, 4 MiB upload" 2 0 $st "$work/s_client.log" \
	"$work/s_server.log"
stop_all

# 2b. The other way: s_server -WWW sends a file over HTTP/1.0, s_client reads to the close.
begin
mkdir -p "$work/www"
cp "$work/payload" "$work/www/payload"
(cd "$work/www" && exec "${shim[@]}" openssl s_server -quiet -WWW -naccept 1 -accept "$addr:4433" \
	-cert "$work/cert.pem" -key "$work/key.pem" < /dev/null > "$work/www-server.log" 2>&1) &
spid=$!
pids+=("$spid")
wait_port 4433
# (-quiet implies -ign_eof: it reads on after its request, until the server closes.)
printf 'GET /payload HTTP/1.0\r\n\r\n' | "${shim[@]}" openssl s_client -quiet -verify_return_error \
	-CAfile "$work/cert.pem" -verify_ip "$addr" -connect "$addr:4433" \
	> "$work/www.out" 2> "$work/www-client.log"
st=$?
reap "$spid" || st=1
python3 -c 'import sys
head, _, body = open(sys.argv[1], "rb").read().partition(b"\r\n\r\n")
sys.exit(not (head.startswith(b"HTTP/1.0 200") and body == open(sys.argv[2], "rb").read()))' \
	"$work/www.out" "$work/payload" || st=1
check "openssl s_server -WWW to s_client, 4 MiB download" 2 0 $st "$work/www-client.log" \
	"$work/www-server.log"
rm -f "$work/www.out" "$work/s_server.out"
stop_all

# 3. nginx over HTTPS, curl verifying its certificate: a 24 MiB download, checksum compared.
begin
cp "$work/blob" "$work/www/blob"
nginx_conf "$work" "listen $addr:8443 ssl; ssl_certificate $work/cert.pem;
		ssl_certificate_key $work/key.pem;"
"${shim[@]}" nginx -c "$work/nginx.conf" -g 'daemon off; master_process on;' \
	> "$work/nginx.log" 2>&1 &
pids+=($!)
wait_port 8443
"${shim[@]}" curl -sSf --cacert "$work/cert.pem" -o "$work/got" -w '%{scheme} %{size_download}\n' \
	"https://$addr:8443/blob" > "$work/curl.out" 2> "$work/curl.log"
st=$?
sed 's/^/# /' "$work/curl.out"
[ "$(sha256sum < "$work/got")" = "$(sha256sum < "$work/blob")" ] || st=1
check "nginx HTTPS + curl, 24 MiB download, checksum" 2 0 $st "$work/curl.log" "$work/nginx.log" \
	"$work/nginx/error.log"
rm -f "$work/got" "$work/www/blob"
stop_all

# 4. PostgreSQL with ssl=on, psql with sslmode=require (pg_hba takes only SSL from the address):
# the session says SSL, ~4 MB of rows go up (\copy, checked row by row by the server) and come
# back (copy to stdout, compared).
begin
pgbin=$(printf '%s\n' /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
pg=$work/pg
st=0
if [ ! -x "$pgbin/postgres" ]; then
	st=1
	echo "# no PostgreSQL under /usr/lib/postgresql (selftests/deps.sh installs it)"
else
	mkdir -p "$pg"
	chown postgres: "$pg"
	# initdb and postgres refuse to run as root.
	"${lim[@]}" runuser -u postgres -- "$pgbin/initdb" -D "$pg/data" -U postgres -A trust \
		-E UTF8 --locale=C --no-sync --no-instructions > "$work/initdb.log" 2>&1 || st=1
	printf 'local all all trust\nhostssl all all %s/32 trust\n' "$addr" > "$pg/data/pg_hba.conf"
	install -o postgres -m 600 "$work/key.pem" "$pg/server.key"
	install -o postgres -m 644 "$work/cert.pem" "$pg/server.crt"
fi
if [ $st = 0 ]; then
	"${lim[@]}" setpriv --reuid=postgres --regid=postgres --init-groups -- "$rsrun" -q -- \
		"$pgbin/postgres" \
		-D "$pg/data" -k "$pg" -h "$addr" -p 5433 -c ssl=on \
		-c ssl_cert_file="$pg/server.crt" -c ssl_key_file="$pg/server.key" -c fsync=off \
		-c shared_buffers=16MB -c max_connections=10 > "$work/postgres.log" 2>&1 &
	pids+=($!)
	wait_port 5433 || st=1
	python3 -c 'import hashlib
for i in range(1, 100001):
    print(f"{i}\t{hashlib.md5(str(i).encode()).hexdigest()}")' > "$work/rows.tsv"
	cat > "$work/pg.sql" <<SQL
select ssl, version from pg_stat_ssl where pid = pg_backend_pid();
create temp table t (i int, h text);
\copy t from '$work/rows.tsv'
select count(*), count(*) filter (where h is distinct from md5(i::text)) from t;
copy (select i, md5(i::text) from generate_series(1, 100000) i order by i) to stdout;
SQL
	conninfo="host=$addr port=5433 user=postgres dbname=postgres sslmode=require"
	"${shim[@]}" "$pgbin/psql" -X -q -At -v ON_ERROR_STOP=1 -f "$work/pg.sql" "$conninfo" \
		> "$work/psql.out" 2> "$work/psql.log" || st=1
	head -n 2 "$work/psql.out" | sed 's/^/# /'
	[[ $(sed -n 1p "$work/psql.out") =~ ^t\|TLSv1\.[23]$ ]] &&
		[ "$(sed -n 2p "$work/psql.out")" = "100000|0" ] &&
		tail -n +3 "$work/psql.out" | cmp -s - "$work/rows.tsv" || st=1
fi
check "postgresql ssl=on + psql sslmode=require, ~4 MB each way" 2 0 $st "$work/psql.log" \
	"$work/postgres.log" "$work/initdb.log"
stop_all

# 5. A TLS client under the shim, its server without it (plain TCP): the client falls back to
# TCP (one fallback, no RDMA connection end), the bytes are the same both ways.
begin
py_tls_pair lim 4434 plain
rdma=$(( $(cnt connections_rdma) - rdma0 ))
[ "$rdma" = 0 ] || { st=1; echo "# $rdma RDMA connection ends, want none"; }
check "mixed: python ssl client under the shim, plain-TCP TLS server, 4 MiB each way" 0 1 $st \
	"$work/plain-server.log" "$work/plain-client.log"
stop_all

echo "# tls_test: ${SECONDS} s"
tap_end
