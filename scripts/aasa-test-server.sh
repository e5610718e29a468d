#!/usr/bin/env bash
# The HTTPS server the association-file tests fetch from (issue 14): nginx, unprivileged, on 127.0.0.1, with a
# throwaway CA and a leaf for made-up domains, serving the real files of ../shared/realworld/aasa.
#
#   scripts/aasa-test-server.sh start DIR REALWORLD_AASA   makes DIR's PKI and files, starts nginx; prints its port
#   scripts/aasa-test-server.sh stop DIR                   stops it
#
# Domains (every one in the leaf's subjectAltName; connect with --resolve DOMAIN:PORT:127.0.0.1):
#   wiki.example      testwiki's file at /.well-known (components with exclude), Cache-Control: max-age=3600
#   root.example      wikipedia.org's file at /apple-app-site-association only (the fallback path)
#   signed.example    wikipedia.org's file CMS-signed by a leaf of the test CA (valid)
#   badsig.example    the same, signed by a leaf of another CA (refused)
#   redirect.example  301 to wiki.example (refused)
#   big.example       a 10 MB file (refused)
#   slow.example      testwiki's file at 1 byte a second (times out)
# Exits 77 when nginx or openssl is missing (the tests skip, saying so).
set -euo pipefail
command="${1:?usage: aasa-test-server.sh start DIR REALWORLD_AASA | stop DIR}"
dir="${2:?a folder}"
nginx="${NGINX:-$(command -v nginx || echo /usr/sbin/nginx)}"

if [ "$command" = stop ]; then
    [ -f "$dir/nginx.pid" ] && kill "$(cat "$dir/nginx.pid")" 2>/dev/null || true
    if [ -f "$dir/watchdog.pid" ]; then
        watchdog="$(cat "$dir/watchdog.pid")"
        # SIGKILL, its sleep first: a caller whose threads block signals (a test process) passes that mask on, and
        # a blocked SIGTERM would leave both for ten minutes.
        pkill -9 -P "$watchdog" sleep 2>/dev/null || true
        kill -9 "$watchdog" 2>/dev/null || true
    fi
    exit 0
fi
realworld="${3:?the folder of real association files}"
[ -x "$nginx" ] || { echo "nginx is not installed (apt-get install nginx-light)" >&2; exit 77; }
command -v openssl > /dev/null || { echo "openssl is not installed" >&2; exit 77; }
mkdir -p "$dir/tmp" "$dir/www/wiki/.well-known" "$dir/www/root" "$dir/www/signed/.well-known" "$dir/www/badsig/.well-known" "$dir/www/big/.well-known" "$dir/www/slow/.well-known"
cd "$dir"
names="wiki.example root.example signed.example badsig.example redirect.example big.example slow.example"
san="subjectAltName=$(for n in $names; do printf 'DNS:%s,' "$n"; done | sed 's/,$//')"
{
    # EC keys: made in milliseconds, where RSA takes a second.
    openssl ecparam -genkey -name prime256v1 -noout -out ca.key
    openssl req -x509 -new -key ca.key -out ca.pem -days 30 -subj "/CN=Baton Test CA" \
        -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign"
    openssl ecparam -genkey -name prime256v1 -noout -out other.key
    openssl req -x509 -new -key other.key -out other.pem -days 30 -subj "/CN=Someone Else CA" \
        -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign"
    printf '%s\nbasicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n' "$san" > leaf.ext
    openssl ecparam -genkey -name prime256v1 -noout -out leaf.key
    openssl req -new -key leaf.key -out leaf.csr -subj "/CN=wiki.example"
    openssl x509 -req -in leaf.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 20 -extfile leaf.ext -out leaf.pem
    openssl x509 -req -in leaf.csr -CA other.pem -CAkey other.key -CAcreateserial -days 20 -extfile leaf.ext -out otherleaf.pem
    wikipedia="$realworld/wikimedia__operations-mediawiki-config__wikipedia.org_apple-app-site-association.json"
    testwiki="$realworld/wikimedia__operations-mediawiki-config__testwiki_apple-app-site-association.json"
    cp "$testwiki" www/wiki/.well-known/apple-app-site-association
    cp "$testwiki" www/slow/.well-known/apple-app-site-association
    cp "$wikipedia" www/root/apple-app-site-association
    openssl cms -sign -binary -in "$wikipedia" -inkey leaf.key -signer leaf.pem -nodetach -outform DER -out www/signed/.well-known/apple-app-site-association
    openssl cms -sign -binary -in "$wikipedia" -inkey leaf.key -signer otherleaf.pem -nodetach -outform DER -out www/badsig/.well-known/apple-app-site-association
    head -c 10485760 /dev/zero > www/big/.well-known/apple-app-site-association
} > pki.log 2>&1 || { cat pki.log >&2; exit 1; }

# The daemons (nginx, the watchdog) must not keep descriptors the caller gave this script: Foundation's Process
# learns that a child ended when a socket it passed down closes, so a daemon holding it would make the caller wait
# for ten minutes.
close_inherited() {
    for fd in /proc/$BASHPID/fd/*; do
        fd="${fd##*/}"
        [ "$fd" -gt 2 ] 2>/dev/null && eval "exec $fd>&-" 2>/dev/null
    done
    true
}

for attempt in 1 2 3 4 5; do
    port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
    server() { # name, root, extra directives
        printf '    server {\n        listen 127.0.0.1:%s ssl;\n        server_name %s;\n        ssl_certificate %s/leaf.pem;\n        ssl_certificate_key %s/leaf.key;\n        root %s/www/%s;\n%s\n    }\n' \
            "$port" "$1" "$dir" "$dir" "$dir" "$2" "$3"
    }
    # Run as root (a container, CI), the workers would become nobody and not read the temporary folder.
    user=""
    [ "$(id -u)" = 0 ] && user="user root;"
    cat > nginx.conf <<CONF
$user
worker_processes 1;
error_log $dir/error.log;
pid $dir/nginx.pid;
events { worker_connections 64; }
http {
    access_log $dir/access.log;
    client_body_temp_path $dir/tmp/body;
    proxy_temp_path $dir/tmp/proxy;
    fastcgi_temp_path $dir/tmp/fastcgi;
    uwsgi_temp_path $dir/tmp/uwsgi;
    scgi_temp_path $dir/tmp/scgi;
    default_type application/json;
$(server wiki.example wiki '        add_header Cache-Control "max-age=3600";')
$(server root.example root '')
$(server signed.example signed '        default_type application/pkcs7-mime;')
$(server badsig.example badsig '        default_type application/pkcs7-mime;')
$(server redirect.example wiki '        return 301 https://wiki.example/.well-known/apple-app-site-association;')
$(server big.example big '')
$(server slow.example slow '        limit_rate 1;')
}
CONF
    # Its output goes to a file: a daemon left holding the caller's pipe would keep the caller reading forever.
    if (close_inherited; exec "$nginx" -e "$dir/error.log" -p "$dir" -c "$dir/nginx.conf" -g 'daemon on;') < /dev/null > "$dir/start.log" 2>&1; then
        # A stray server is stopped after ten minutes even if the test that started it never does.
        (close_inherited; sleep 600; kill "$(cat "$dir/nginx.pid")" 2>/dev/null) < /dev/null > /dev/null 2>&1 &
        echo $! > "$dir/watchdog.pid"
        echo "$port"
        exit 0
    fi
done
cat "$dir/start.log" >&2
exit 1
