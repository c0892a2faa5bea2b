#!/usr/bin/env bash
# check.sh: model-check lease.pml, permits.pml and shared.pml with SPIN
# (README.md says what each run means).
#
#   check.sh            every scenario, exhaustively, two at a time: each
#                       must end with 0 errors and a complete search (exit
#                       status 0)
#   check.sh NAME       the mutant NAME (a line of MUTANTS, or a "mutant
#                       NAME" line of permits.pml's or shared.pml's
#                       header), which puts a known defect back: the
#                       check must fail (exit status 1; an assertion, or
#                       a deadlock) and prints the counterexample, the
#                       interleaving the server ran; 0 means the model
#                       no longer sees the defect
#   check.sh mutants    every mutant of the models, two at a time: exit
#                       status 0 when each of them failed with a trail
#
# MODEL_SKIP (names of scenarios and mutants, space-separated) leaves
# those out of the first and third forms; MODEL_ONLY keeps only those.
# make test leaves out the slowest, which make model-late checks.
#
# Exit status 2: the model or the verifier could not be built.
# Each run works in a directory of its own under ${TMPDIR:-/tmp}, removed
# at the end (MODEL_KEEP=1 keeps it, with pan's output and the trail).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
scenarios=(ENDS FORCE TIME LOSS TOKENS REPAIR RLOSS FIFO QGHOST QDUP PERMITS PSHRINK
	SHARED SWRITE SNOEND)
# permits.pml's and shared.pml's scenarios; their mutants are listed in
# their headers, since MUTANTS is lease.pml's (docs_test.go holds it to
# lease.pml)
permits_scenarios=" PERMITS PSHRINK "
shared_scenarios=" SHARED SWRITE SNOEND "

# header_mutants FILE: the mutants of FILE's header; listed_mutants: all
header_mutants() { sed -n 's/^ \* mutant \([A-Z0-9_]*\)$/\1/p' "$here/$1"; }
listed_mutants() { header_mutants permits.pml; header_mutants shared.pml; }

# model NAME: the file a scenario or mutant belongs to.
model() {
	if [[ "$permits_scenarios" == *" $1 "* ]] || header_mutants permits.pml | grep -qx "$1"; then
		echo permits.pml
	elif [[ "$shared_scenarios" == *" $1 "* ]] || header_mutants shared.pml | grep -qx "$1"; then
		echo shared.pml
	else
		echo lease.pml
	fi
}

# selected NAME...: the names that MODEL_ONLY and MODEL_SKIP let through.
selected() {
	local name
	for name in "$@"; do
		if [ -n "${MODEL_ONLY:-}" ] && [[ " $MODEL_ONLY " != *" $name "* ]]; then
			continue
		fi
		[[ " ${MODEL_SKIP:-} " == *" $name "* ]] || echo "$name"
	done
}

# spin -a writes the verifier, gcc builds it (-O1: the exhaustive runs
# take longer than the build; a mutant stops at its first error, -O0),
# pan searches. -w: the hash table's size; -m: the depth bound, above any
# run of the model.
build() { # dir model opt defines...
	local dir=$1 pml=$2 opt=$3
	shift 3
	cp "$here/$pml" "$dir/"
	(cd "$dir" && spin -a "$@" "$pml" >spin.out 2>&1 && gcc -w $opt -DSAFETY -DNOBOUNDCHECK -o pan pan.c) || {
		cat "$dir/spin.out" >&2
		return 1
	}
}

scenario() { # name
	local name=$1 dir start pml
	pml=$(model "$name")
	dir=$(mktemp -d)
	start=$EPOCHREALTIME
	build "$dir" "$pml" -O1 "-DSCENARIO=$name" || { finish "$dir"; return 2; }
	(cd "$dir" && ./pan -m100000 -w22 >pan.out 2>&1) || true
	local states errors secs
	states=$(awk '/states, stored/ {print $1}' "$dir/pan.out")
	errors=$(sed -n 's/.*errors: \([0-9]*\).*/\1/p' "$dir/pan.out")
	secs=$(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN {print b - a}')
	if [ "$errors" != 0 ] || grep -q "Search not completed" "$dir/pan.out"; then
		echo "model: scenario $name FAILED ($errors errors):"
		(cd "$dir" && spin -t "-DSCENARIO=$name" "$pml" 2>&1 | grep -E '^ *@|^spin:' | sed 's/  */ /g') || true
		finish "$dir"
		return 1
	fi
	printf 'model: scenario %-7s ok: %9s states, 0 errors, %.1f s\n' "$name" "$states" "$secs"
	finish "$dir"
}

# mutant NAME [quiet]: 1 when the check fails with a counterexample (it
# must), 0 when it passes, 2 when it cannot run.
mutant() { # name [quiet]
	local name=$1 quiet=${2:-} dir start pml
	if ! grep -qx "$name" "$here/MUTANTS" && ! listed_mutants | grep -qx "$name"; then
		echo "model: $name is not a mutant of model/MUTANTS, model/permits.pml or model/shared.pml" >&2
		return 2
	fi
	pml=$(model "$name")
	dir=$(mktemp -d)
	start=$EPOCHREALTIME
	# Alone, the shortest trail (-i, which needs -DREACH) is worth the
	# full search it costs; make mutants takes the first one.
	local opt=-O0 short=
	if [ -z "$quiet" ]; then
		opt="-O1 -DREACH" short=-i
	fi
	build "$dir" "$pml" "$opt" "-D$name" || { finish "$dir"; return 2; }
	(cd "$dir" && ./pan -m100000 -w22 $short >pan.out 2>&1) || true
	local errors secs line inv steps
	errors=$(sed -n 's/.*errors: \([0-9]*\).*/\1/p' "$dir/pan.out")
	secs=$(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN {print b - a}')
	if [ "${errors:-0}" = 0 ] || [ ! -f "$dir/$pml.trail" ]; then
		echo "model: mutant $name NOT CAUGHT: the model passes with the defect put back"
		finish "$dir"
		return 0
	fi
	(cd "$dir" && spin -t "-D$name" "$pml" >trail.out 2>&1) || true
	line=$(sed -n "s/^spin: $pml:\\([0-9]*\\), Error: assertion violated.*/\\1/p" "$dir/trail.out" | head -1)
	steps=$(sed -n 's/^spin: trail ends after \([0-9]*\) steps.*/\1/p' "$dir/trail.out")
	inv=$(awk -v n="$line" 'NR <= n && /^inline / {name = $2} END {sub(/\(.*/, "", name); print name}' "$here/$pml")
	# a deadlock: no assertion, pan's invalid end state
	if [ -z "$line" ] && grep -q "invalid end state" "$dir/pan.out"; then
		inv="invalid end state, a deadlock" line=end
	fi
	printf 'model: mutant %-26s fails: %s (%s:%s), trail of %s steps, %.1f s\n' "$name" "$inv" "$pml" "$line" "$steps" "$secs"
	if [ -z "$quiet" ]; then
		echo "model: the steps the server ran, and the assertion violated (or the processes deadlocked):"
		grep -E '^ *@' "$dir/trail.out" | sed 's/^ *//; s/  */ /g; s/^/  /'
		grep -E "^spin: ($pml|text)" "$dir/trail.out" | sed 's/^/  /' || true
		# a deadlock: the processes stopped where they have no end
		[ "$line" != end ] || grep -E '^ *[0-9]+:[[:space:]]+proc ' "$dir/trail.out" | grep -v 'valid end state' | sed 's/^ *[0-9]*:[[:space:]]*/  /' || true
	fi
	finish "$dir"
	return 1
}

finish() { # dir
	if [ "${MODEL_KEEP:-}" = 1 ]; then
		echo "model: kept $1"
	else
		rm -rf "$1"
	fi
}

case "${1:-}" in
"")
	export -f scenario build finish model header_mutants listed_mutants
	export here permits_scenarios shared_scenarios
	status=0
	selected "${scenarios[@]}" | xargs -P 2 -I{} bash -c 'scenario {}' || status=1
	exit $status
	;;
mutants)
	export -f mutant build finish model header_mutants listed_mutants
	export here permits_scenarios shared_scenarios
	status=0
	selected $(grep -v '^#' "$here/MUTANTS" | grep .) $(listed_mutants) | xargs -P 2 -I{} bash -c 'mutant {} quiet; [ $? = 1 ] || exit 255' || status=1
	if [ $status != 0 ]; then
		echo "model: a mutant was not caught, or could not be checked"
	fi
	exit $status
	;;
*)
	mutant "$1"
	;;
esac
