# shellcheck shell=bash
# Shared settings and helpers for scripts/sut3/{up,down,status}: the third
# server pair, of a third lineage: Courier IMAP (Maildir, authdaemond with a
# userdb) + OpenSMTPD (delivering into the Maildirs itself). Sourced, not
# executed. Nothing here prints or stores a password in clear.
# shellcheck disable=SC2034 # the variables are used by the scripts that source this

# The first pair's generic helpers: greeting, wait_for, require_root,
# pid_running, stop_pid.
# shellcheck source=../sut/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../sut/lib.sh"

SUT3_DIR=${MAILBENCH_SUT3_DIR:-/var/lib/mailbench-sut3}
SUT3_HOST=127.0.0.1
SUT3_IMAP_PORT=4143  # Courier imapd, plain text (no TLS in this pair)
SUT3_SMTP_PORT=4525  # OpenSMTPD
SUT3_DEFAULT_SINK=127.0.0.1:2526
SUT3_DOMAIN=example.test
# The packages are unpacked here, never installed: their maintainer scripts
# write /etc (/etc/courier, /etc/smtpd.conf) and add system users.
SUT3_ROOT=$SUT3_DIR/root
SUT3_PACKAGES=(courier-imap courier-base courier-authdaemon courier-authlib courier-authlib-userdb libcourier-unicode4 opensmtpd)
# Accounts that exist only in the pair's private view of /etc/passwd:
# OpenSMTPD's privilege-separation users (Debian's build names them
# opensmtpd and opensmtpq) and the owner of every Maildir.
SUT3_UID_SMTPD=64101
SUT3_UID_SMTPQ=64102
SUT3_UID_VMAIL=64103

log() { printf 'sut3: %s\n' "$*" >&2; }
die() { printf 'sut3: error: %s\n' "$*" >&2; exit 1; }

check_sut3_dir() {
	case $SUT3_DIR in
	/*) ;;
	*) die "MAILBENCH_SUT3_DIR must be an absolute path: $SUT3_DIR" ;;
	esac
	case $SUT3_DIR in
	/ | /etc | /etc/* | /usr | /usr/* | /var | /var/lib | /root | /home | /run | /run/*) die "refusing to use $SUT3_DIR as the state dir" ;;
	esac
	((${#SUT3_DIR} <= 60)) || die "MAILBENCH_SUT3_DIR is too long for unix socket paths (max 60 chars)"
}

imap_answers() { greeting "$SUT3_HOST" "$SUT3_IMAP_PORT" | grep -q '^\* OK'; }
smtp_answers() { greeting "$SUT3_HOST" "$SUT3_SMTP_PORT" | grep -q '^220[ -]'; }

# The pair runs in namespaces of its own (mount, pid) under one supervisor:
# killing it ends every process of the pair.
pair_running() { pid_running "$SUT3_DIR/run/supervisor.pid"; }

# in_pair CMD...: runs CMD in the pair's mount namespace (its /etc, /usr).
in_pair() { nsenter -t "$(cat "$SUT3_DIR/run/supervisor.pid")" -m -- "$@"; }

# KILL at once: unshare ignores TERM while it waits for its child, and its
# death SIGKILLs the child (--kill-child), the pid namespace's init, which
# ends every process of the pair. A test pair has nothing to flush.
stop_pair() { stop_pid "$SUT3_DIR/run/supervisor.pid" "courier + opensmtpd" KILL; }

etc_fingerprint() {
	sha256sum /etc/passwd /etc/group
	find /etc -maxdepth 1 -printf '%f\n' | sort | sha256sum
}
