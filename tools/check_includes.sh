#!/bin/sh
# Forbidden includes between sluice's modules (STYLE.md: "scheduler/ knows
# nothing of Redis, worker/ nothing of HTTP, admin/ nothing of timers").
# One line per rule; every offending include is named with file and line.
# The last line, "includes: N passed, M failed", counts the rules; exit 1
# when one failed.  POSIX sh and grep; run from the repository root (or
# give it as $1).
cd "${1:-.}" || exit 2

passed=0
failed=0

# check DIR WHAT PATTERN [ALLOWED]: no file under DIR includes a quoted header
# matching the extended regex PATTERN (except one matching ALLOWED).
check() {
	dir=$1 what=$2 pattern=$3 allowed=$4
	hits=$(grep -rnE --include='*.c' --include='*.h' "^[[:space:]]*#[[:space:]]*include[[:space:]]*\"($pattern)" "$dir" 2>/dev/null)
	if [ -n "$allowed" ] && [ -n "$hits" ]; then
		hits=$(printf '%s\n' "$hits" | grep -vE "#[[:space:]]*include[[:space:]]*\"($allowed)\"")
	fi
	if [ -z "$hits" ]; then
		echo "includes: $dir $what: ok"
		passed=$((passed + 1))
	else
		echo "includes: $dir $what: FAILED"
		printf '%s\n' "$hits" | while IFS= read -r line; do
			# grep -n gives file:line:text
			file=${line%%:*}
			rest=${line#*:}
			echo "  $file:${rest%%:*}: forbidden: ${rest#*:}"
		done
		failed=$((failed + 1))
	fi
}

check scheduler/ "includes nothing of the project" 'core/|worker/|admin/|daemon/'
check worker/ "does not include admin/" 'admin/'
check admin/ "sees the worker only through worker/status.h, and no scheduler/" \
	'scheduler/|worker/' 'worker/status\.h'
check core/ "includes no worker/, admin/ or daemon/" 'worker/|admin/|daemon/'

echo "includes: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
