# shellcheck shell=bash
# Shared settings and helpers for scripts/sut2/{up,down,status}: the second
# server pair, Cyrus IMAP (LMTP delivery) + Exim. Sourced, not executed.
# Nothing here prints or stores a password in clear.
# shellcheck disable=SC2034 # the variables are used by the scripts that source this

# The first pair's generic helpers: greeting, wait_for, require_root, stop_pid (its
# SUT_* settings come along and are not used here). log, die and
# etc_fingerprint are redefined below for this pair.
# shellcheck source=../sut/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../sut/lib.sh"

SUT2_DIR=${MAILBENCH_SUT2_DIR:-/var/lib/mailbench-sut2}
SUT2_HOST=127.0.0.1
SUT2_IMAP_PORT=3143  # Cyrus imapd, STARTTLS offered
SUT2_IMAPS_PORT=3993 # Cyrus imapd over implicit TLS
SUT2_SMTP_PORT=3525  # Exim, STARTTLS offered
SUT2_DEFAULT_SINK=127.0.0.1:2526
SUT2_DOMAIN=example.test
# The packages are unpacked here, never installed: Debian's cyrus-imapd
# conflicts with dovecot-imapd and exim4 with postfix as packages.
SUT2_ROOT=$SUT2_DIR/root
# Cyrus and Exim drop root for this existing system account (Debian's own
# "mail", uid 8): no user is added to /etc/passwd. Exim's binary looks its
# user up as "Debian-exim"; it runs in a private mount namespace whose
# /etc/passwd and /etc/group are copies with that name added for uid 8
# (the host's files are never written).
SUT2_RUN_USER=mail
SUT2_PACKAGES=(cyrus-common cyrus-imapd exim4-daemon-light sasl2-bin)

CYRUS_CONF=$SUT2_DIR/cyrus/imapd.conf
CYRUS_MASTER_CONF=$SUT2_DIR/cyrus/cyrus.conf
EXIM_CONF=$SUT2_DIR/exim/exim.conf

log() { printf 'sut2: %s\n' "$*" >&2; }
die() { printf 'sut2: error: %s\n' "$*" >&2; exit 1; }

check_sut2_dir() {
	case $SUT2_DIR in
	/*) ;;
	*) die "MAILBENCH_SUT2_DIR must be an absolute path: $SUT2_DIR" ;;
	esac
	case $SUT2_DIR in
	/ | /etc | /etc/* | /usr | /usr/* | /var | /var/lib | /root | /home) die "refusing to use $SUT2_DIR as the state dir" ;;
	esac
	# Cyrus and Exim put unix sockets under it; sun_path holds 108 bytes.
	((${#SUT2_DIR} <= 60)) || die "MAILBENCH_SUT2_DIR is too long for unix socket paths (max 60 chars)"
}

# The unpacked libraries (libcyrus*, sasl plugins) come first.
sut2_env() {
	export LD_LIBRARY_PATH=$SUT2_ROOT/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
}

imap_answers() { greeting "$SUT2_HOST" "$SUT2_IMAP_PORT" | grep -q '^\* OK'; }
smtp_answers() { greeting "$SUT2_HOST" "$SUT2_SMTP_PORT" | grep -q '^220[ -]'; }

cyrus_running() { pid_running "$SUT2_DIR/run/cyrus-master.pid"; }
exim_running() { pid_running "$SUT2_DIR/run/exim.pid"; }

# What up and down must leave as it was: the account files and /etc's
# listing (no /etc/cyrus.conf, /etc/imapd.conf or /etc/exim4 appears).
etc_fingerprint() {
	sha256sum /etc/passwd /etc/group
	find /etc -maxdepth 1 -printf '%f\n' | sort | sha256sum
}
