# shellcheck shell=bash
# Shared settings and helpers for scripts/sut/{up,down,status,selftest}.
# Sourced, not executed. Nothing here prints or stores a password.
# shellcheck disable=SC2034 # the variables are used by the scripts that source this

SUT_DIR=${MAILBENCH_SUT_DIR:-/var/lib/mailbench-sut}
# The address IMAP and SMTP listen on: loopback, or an address of a network
# namespace a test made (integration/netns_test.go). LMTP stays on loopback.
SUT_HOST=${MAILBENCH_SUT_HOST:-127.0.0.1}
# The clients' networks, which Postfix relays for.
SUT_NETWORKS=${MAILBENCH_SUT_NETWORKS:-127.0.0.0/8 [::1]/128}
SUT_IMAP_PORT=1143      # IMAP, STARTTLS offered
SUT_IMAPS_PORT=1993     # IMAP over implicit TLS
SUT_LMTP_PORT=24024     # Dovecot LMTP, used by Postfix only
SUT_SMTP_PORT=2525      # Postfix SMTP, STARTTLS offered
SUT_STATS_PORT=9900     # Dovecot's statistics in OpenMetrics (http://127.0.0.1:9900/metrics), for [server]
SUT_DEFAULT_SINK=127.0.0.1:2526
SUT_DOMAIN=example.test
SUT_VMAIL_USER=mailbench-vmail

DOVECOT_CONF=$SUT_DIR/dovecot/dovecot.conf
POSTFIX_CONF_DIR=$SUT_DIR/postfix
DOVECOT_BASE_DIR=$SUT_DIR/run/dovecot

log() { printf 'sut: %s\n' "$*" >&2; }
die() { printf 'sut: error: %s\n' "$*" >&2; exit 1; }

require_root() {
	[[ $(id -u) -eq 0 ]] || die "must run as root"
}

check_sut_dir() {
	case $SUT_DIR in
	/*) ;;
	*) die "MAILBENCH_SUT_DIR must be an absolute path: $SUT_DIR" ;;
	esac
	case $SUT_DIR in
	/ | /etc | /etc/* | /usr | /usr/* | /var | /var/lib | /root | /home) die "refusing to use $SUT_DIR as the state dir" ;;
	esac
	# Dovecot puts unix sockets under base_dir; sun_path holds 108 bytes.
	((${#SUT_DIR} <= 60)) || die "MAILBENCH_SUT_DIR is too long for unix socket paths (max 60 chars)"
}

# greeting HOST PORT: prints the first line the server sends, within 5 s.
# Fails if the port doesn't accept or stays silent.
greeting() {
	local out
	# shellcheck disable=SC2016 # $1, $2, $line belong to the inner shell
	out=$(timeout 5 bash -c '
		exec 3<>"/dev/tcp/$1/$2" || exit 1
		IFS= read -r -t 4 line <&3 || exit 1
		printf "%s" "$line"
	' greeting "$1" "$2" 2>/dev/null) || return 1
	printf '%s\n' "${out%$'\r'}"
}

imap_answers() { greeting "$SUT_HOST" "$SUT_IMAP_PORT" | grep -q '^\* OK'; }
smtp_answers() { greeting "$SUT_HOST" "$SUT_SMTP_PORT" | grep -q '^220[ -]'; }

dovecot_running() {
	[[ -f $DOVECOT_BASE_DIR/master.pid ]] && kill -0 "$(cat "$DOVECOT_BASE_DIR/master.pid")" 2>/dev/null
}

postfix_running() {
	[[ -f $POSTFIX_CONF_DIR/main.cf ]] && command -v postfix >/dev/null &&
		postfix -c "$POSTFIX_CONF_DIR" status >/dev/null 2>&1
}

# raise_nofile: the soft fd limit up to the hard one (at most 65536), for
# the daemons this shell starts next: a daemon keeps the limit of whoever
# started it, and Dovecot wants an fd per client. Every script that starts
# a SUT daemon calls it first; at a shell's 1024 (a common default)
# Dovecot runs out near a thousand connections (its log process holds an
# fd per process: 287 at 275 processes, measured).
raise_nofile() {
	local hard
	hard=$(ulimit -Hn)
	if [[ $hard == unlimited ]] || ((hard > 65536)); then ulimit -n 65536; else ulimit -n "$hard"; fi
}

# port_taken_by_other PORT: something other than our daemons answers there.
port_taken_by_other() {
	greeting "$SUT_HOST" "$1" >/dev/null
}

# start_dovecot: starts the SUT's Dovecot from its config, with the fd limit
# of raise_nofile, after making sure nobody else holds its ports.
start_dovecot() {
	local p
	for p in $SUT_IMAP_PORT $SUT_IMAPS_PORT $SUT_LMTP_PORT; do
		! port_taken_by_other "$p" || die "$SUT_HOST:$p is already in use by another program"
	done
	(raise_nofile && exec dovecot -c "$DOVECOT_CONF" </dev/null >>"$SUT_DIR/log/dovecot-start.log" 2>&1) ||
		die "dovecot did not start; see $SUT_DIR/log/dovecot.log"
	log "started dovecot"
}

# start_postfix: starts the SUT's Postfix likewise.
start_postfix() {
	! port_taken_by_other "$SUT_SMTP_PORT" || die "$SUT_HOST:$SUT_SMTP_PORT is already in use by another program"
	(raise_nofile && exec postfix -c "$POSTFIX_CONF_DIR" start </dev/null >>"$SUT_DIR/log/postfix-start.log" 2>&1) ||
		die "postfix did not start; see $SUT_DIR/log/postfix-start.log and postfix.log"
	log "started postfix"
}

# wait_for DESCRIPTION SECONDS COMMAND...: polls COMMAND every 0.2 s.
wait_for() {
	local what=$1 secs=$2
	shift 2
	local deadline=$((SECONDS + secs))
	until "$@"; do
		((SECONDS < deadline)) || { log "timed out after ${secs}s waiting for $what"; return 1; }
		sleep 0.2
	done
}

# pid_running FILE: the pid file's process is alive.
pid_running() { [[ -f $1 ]] && kill -0 "$(cat "$1")" 2>/dev/null; }

# stop_pid FILE NAME [SIGNAL]: SIGNAL (default TERM), then KILL after 10 s;
# the pid file goes. Used by scripts/sut2 and scripts/sut3 (log is the
# sourcing pair's).
stop_pid() {
	local f=$1 name=$2 sig=${3:-TERM} pid i
	pid_running "$f" || return 0
	pid=$(cat "$f")
	kill -s "$sig" "$pid" 2>/dev/null || true
	for ((i = 0; i < 100; i++)); do
		kill -0 "$pid" 2>/dev/null || { log "stopped $name"; rm -f "$f"; return 0; }
		sleep 0.1
	done
	kill -9 "$pid" 2>/dev/null || true
	log "killed $name"
	rm -f "$f"
}

stop_dovecot() {
	dovecot_running || return 0
	local pid
	pid=$(cat "$DOVECOT_BASE_DIR/master.pid")
	kill -TERM "$pid" 2>/dev/null || true
	wait_for "dovecot (pid $pid) to exit" 30 bash -c "! kill -0 $pid 2>/dev/null" ||
		{ kill -KILL "$pid" 2>/dev/null || true; }
	log "stopped dovecot (pid $pid)"
}

stop_postfix() {
	postfix_running || return 0
	local pid
	pid=$(tr -d ' ' <"$SUT_DIR/postfix-spool/pid/master.pid" 2>/dev/null || true)
	postfix -c "$POSTFIX_CONF_DIR" stop >/dev/null 2>&1 || true
	if [[ -n $pid ]]; then
		wait_for "postfix master (pid $pid) to exit" 30 bash -c "! kill -0 $pid 2>/dev/null" ||
			{ kill -KILL "$pid" 2>/dev/null || true; }
	fi
	log "stopped postfix${pid:+ (pid $pid)}"
}

# Fingerprint of the machine's own mail configuration, to prove we leave it alone.
etc_fingerprint() {
	local d
	for d in /etc/postfix /etc/dovecot; do
		[[ -d $d ]] && find "$d" -xdev \( -type f -o -type l \) -print0 | sort -z | xargs -0r sha256sum
	done
	return 0
}
