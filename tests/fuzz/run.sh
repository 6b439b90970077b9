#!/bin/bash
# Run libFuzzer harnesses for a bounded time each and report what they did.
#
#   tests/fuzz/run.sh CORPUS_ROOT OUT_DIR HARNESS...
#
# Each HARNESS (a program tests/fuzz/fuzz_NAME built with --enable-fuzzing)
# runs FUZZ_SECONDS (default 60) on a scratch copy of CORPUS_ROOT/NAME in a
# temporary directory (the corpus in the source tree is never written);
# FUZZ_JOBS harnesses (default 1) run at a time. OUT_DIR/NAME/ keeps the
# log and any reproducer (crash-*, leak-*, timeout-*, oom-*). Prints one
# line per harness (executions, coverage: cov = edges, ft = features,
# corpus size) and fails if any harness found anything; the reproducer is
# then printed in hex (od) so that a CI log keeps it. To replay one:
#   OUT_DIR/../tests/fuzz/fuzz_NAME OUT_DIR/NAME/crash-...
# or, in any build, tests/fuzz/replay_NAME FILE.
set -u

if [ $# -lt 3 ]; then
	echo "usage: $0 CORPUS_ROOT OUT_DIR HARNESS..." >&2
	exit 2
fi
corpus_root=$1
out=$2
shift 2
seconds=${FUZZ_SECONDS:-60}
jobs=${FUZZ_JOBS:-1}
# libFuzzer does the leak checks per input; a stack-use-after-return
# check on every call would cost most of the executions.
export ASAN_OPTIONS=${FUZZ_ASAN_OPTIONS:-detect_leaks=1:halt_on_error=1:abort_on_error=0:strict_string_checks=1}
export UBSAN_OPTIONS=${FUZZ_UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
if [ -z "${ASAN_SYMBOLIZER_PATH:-}" ]; then
	for s in llvm-symbolizer llvm-symbolizer-14 /usr/lib/llvm-14/bin/llvm-symbolizer; do
		if command -v "$s" >/dev/null 2>&1; then
			ASAN_SYMBOLIZER_PATH=$(command -v "$s")
			export ASAN_SYMBOLIZER_PATH
			break
		fi
	done
fi

mkdir -p "$out" || exit 2
scratch=$(mktemp -d "${TMPDIR:-/tmp}/targetd-fuzz-corpus.XXXXXX") || exit 2
trap 'rm -rf "$scratch"' EXIT

# run_one HARNESS: fuzz it; the exit status is libFuzzer's.
run_one() {
	local prog=$1 name dir work
	name=$(basename "$prog")
	name=${name#fuzz_}
	dir=$out/$name
	work=$scratch/$name
	rm -rf "$dir" "$work" "$work.tmp"
	mkdir -p "$dir" "$work"
	if [ -d "$corpus_root/$name" ]; then
		cp -R "$corpus_root/$name/." "$work/"
	fi
	mkdir -p "$work.tmp"
	TMPDIR=$work.tmp "$prog" -max_total_time="$seconds" -print_final_stats=1 -timeout=25 \
		-rss_limit_mb=2048 -artifact_prefix="$dir/" "$work" >"$dir/log" 2>&1
}

# report NAME STATUS: one line of figures, or the finding.
report() {
	local name=$1 rc=$2 log=$out/$1/log done_line inited execs secs cov ft corp f
	done_line=$(grep -E '^#[0-9]+[[:space:]]+DONE' "$log" | tail -n 1)
	inited=$(grep -E '^#[0-9]+[[:space:]]+INITED' "$log" | tail -n 1)
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
	secs=$(sed -n 's/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p' "$log" | tail -n 1)
	cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$done_line")
	ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$done_line")
	corp=$(sed -n 's/.* corp: \([0-9]*\/[0-9A-Za-z]*\).*/\1/p' <<<"$done_line")
	if [ "$rc" = 0 ] && [ -n "$done_line" ]; then
		printf 'fuzz: %-12s %10s executions in %ss, cov %s ft %s (seeds: cov %s ft %s), corpus %s: no finding\n' \
			"$name" "${execs:-?}" "${secs:-?}" "${cov:-?}" "${ft:-?}" \
			"$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$inited")" \
			"$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$inited")" "${corp:-?}"
		return 0
	fi
	echo "fuzz: $name: FINDING (libFuzzer exit status $rc); the end of its log:"
	tail -n 80 "$log"
	for f in "$out/$name"/crash-* "$out/$name"/leak-* "$out/$name"/timeout-* "$out/$name"/oom-* \
		"$out/$name"/slow-unit-*; do
		[ -f "$f" ] || continue
		echo "fuzz: $name: reproducer $f ($(wc -c <"$f") bytes):"
		od -A x -t x1 -v "$f" | head -n 256
	done
	return 1
}

status=0
names=()
pids=()
for prog in "$@"; do
	if [ ! -x "$prog" ]; then
		echo "fuzz: $prog is not built (configure with --enable-fuzzing, then make)" >&2
		exit 2
	fi
	run_one "$prog" &
	pids+=($!)
	names+=("$(basename "$prog" | sed 's/^fuzz_//')")
	# at most $jobs at a time: wait for the oldest
	if [ "${#pids[@]}" -ge "$jobs" ]; then
		wait "${pids[0]}"
		report "${names[0]}" $? || status=1
		pids=("${pids[@]:1}")
		names=("${names[@]:1}")
	fi
done
while [ "${#pids[@]}" -gt 0 ]; do
	wait "${pids[0]}"
	report "${names[0]}" $? || status=1
	pids=("${pids[@]:1}")
	names=("${names[@]:1}")
done
[ "$status" = 0 ] && echo "fuzz: $# harnesses, ${seconds}s each: no finding"
exit "$status"
