# bench/fair.sh: what makes a side-by-side trial fair, sourced by the
# comparison scripts (bench/imaptest-vs-mailbench, bench/submit-vs-smtp-source,
# bench/sink-vs-smtp-sink). Before each trial, fair_start:
#
#   1. clears the loopback TIME_WAIT sockets the previous trials left
#      (`ss -K state time-wait`, root): a tool that closes cleanly leaves
#      one per connection (~20,000 per reconnect trial) and a tool that
#      resets (smtp-source's SO_LINGER 0) leaves none; left in place they
#      lengthen every later connect's lookups, whichever tool runs next.
#      Without root, it waits for them to expire instead (at most
#      FAIR_TW_WAIT seconds) and says so.
#   2. waits until the machine is quiet: the CPU busy below FAIR_BUSY
#      percent of all cores over a FAIR_SAMPLE-second sample, at most
#      FAIR_WAIT seconds. A trial that starts on a busy machine anyway is
#      marked in the results (its "quiet" column says busy=N%), never
#      silently mixed with the quiet ones.
#
# fair_start prints the quiet column's value ("quiet" or "busy=N%") on
# stdout; the caller writes it beside the trial's figures.
#
# Environment (defaults): FAIR_BUSY=15 FAIR_SAMPLE=2 FAIR_WAIT=120
# FAIR_TW_WAIT=70 FAIR=1 (0: skip both steps, for a quick look; every
# trial then says "unchecked").

FAIR=${FAIR:-1}
FAIR_BUSY=${FAIR_BUSY:-15}
FAIR_SAMPLE=${FAIR_SAMPLE:-2}
FAIR_WAIT=${FAIR_WAIT:-120}
FAIR_TW_WAIT=${FAIR_TW_WAIT:-70}

# fair_busy: the percent of all cores busy over FAIR_SAMPLE seconds
# (/proc/stat: everything but idle and iowait).
fair_busy() {
	local a b
	a=$(awk '/^cpu / { print $2+$3+$4+$7+$8+$9, $5+$6 }' /proc/stat)
	sleep "$FAIR_SAMPLE"
	b=$(awk '/^cpu / { print $2+$3+$4+$7+$8+$9, $5+$6 }' /proc/stat)
	awk -v a="$a" -v b="$b" 'BEGIN { split(a, x); split(b, y); busy = y[1] - x[1]; idle = y[2] - x[2];
		if (busy + idle <= 0) { print 0; exit } printf "%.0f\n", 100 * busy / (busy + idle) }'
}

# fair_timewait: the loopback TCP sockets in TIME_WAIT now.
fair_timewait() { ss -Htan state time-wait 2>/dev/null | grep -c '127\.0\.0\.1' || true; }

fair_start() {
	if [[ $FAIR != 1 ]]; then
		echo unchecked
		return 0
	fi
	local tw waited=0 busy
	tw=$(fair_timewait)
	if ((tw > 0)); then
		if [[ $(id -u) -eq 0 ]] && ss -K state time-wait dst 127.0.0.1 >/dev/null 2>&1; then
			:
		else
			while (($(fair_timewait) > 100 && waited < FAIR_TW_WAIT)); do
				sleep 5
				waited=$((waited + 5))
			done
			echo "fair: $tw TIME_WAIT sockets; not root, waited ${waited}s for them to expire ($(fair_timewait) left)" >&2
		fi
	fi
	waited=0
	busy=$(fair_busy)
	while ((busy >= FAIR_BUSY && waited < FAIR_WAIT)); do
		sleep 3
		waited=$((waited + 3 + FAIR_SAMPLE))
		busy=$(fair_busy)
	done
	if ((busy >= FAIR_BUSY)); then
		echo "fair: the machine stayed busy (${busy}% of the cores over ${FAIR_SAMPLE}s) for ${FAIR_WAIT}s; the trial runs anyway, marked busy" >&2
		echo "busy=${busy}%"
	else
		echo quiet
	fi
}

# fair_noisy FILE: how many trials of a results file (last column: the
# quiet column) did not start on a quiet machine.
fair_noisy() { awk '$NF != "quiet" && $NF != "unchecked"' "$1" | wc -l; }
