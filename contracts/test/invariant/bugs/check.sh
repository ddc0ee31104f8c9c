#!/usr/bin/env bash
# Applies each deliberate bug of this folder in turn, runs the check its row of README.md names first
# (a unit or fuzz test written `Contract.test...`, else an invariant) and checks that it fails;
# reverts the patch whatever happens. Exit 1 if a bug goes uncaught (the suite lost its teeth) or a
# patch no longer applies (regenerate it).
#
#   bash contracts/test/invariant/bugs/check.sh [patch-name ...]     (from the repository root)
#
# FOUNDRY_INVARIANT_RUNS (default 32) sets the runs per check. Only the invariant suite and the
# sources are compiled (the other test files are skipped), which is most of the time each check takes.
set -uo pipefail
cd "$(dirname "$0")/../../../.."
root="$PWD"
bugs="contracts/test/invariant/bugs"
export PATH="$root/node_modules/@foundry-rs/forge-linux-amd64/bin:$root/node_modules/.bin:$PATH"
export FOUNDRY_INVARIANT_RUNS="${FOUNDRY_INVARIANT_RUNS:-32}"

if [ "$#" -gt 0 ]; then
    patches=("$@")
else
    patches=()
    for p in "$bugs"/*.patch; do patches+=("$(basename "$p")"); done
fi

applied=""
revert() { if [ -n "$applied" ]; then git apply -R "$applied"; applied=""; fi; }
trap revert EXIT INT TERM

failed=0
for name in "${patches[@]}"; do
    patch="$bugs/$name"
    # The check its row of the table in README.md names: a unit or fuzz test written as
    # `Contract.test...` when the row names one, else the first invariant it names.
    row=$(grep -F "\`$name\`" "$bugs/README.md")
    unit=$(printf '%s' "$row" | grep -o '[A-Za-z]*Test\.test[A-Za-z_]*' | head -1)
    invariant=$(printf '%s' "$row" | grep -o 'invariant_[A-Za-z]*' | head -1)
    if [ -n "$unit" ]; then
        contract="${unit%%.*}"
        invariant="${unit#*.}"
    else
        contract="ProtocolInvariantTest"
    fi
    if [ -z "$invariant" ]; then
        echo "?? $name: no invariant named for it in $bugs/README.md"
        failed=1
        continue
    fi
    if ! git apply --check "$patch" 2>/dev/null; then
        echo "!! $name no longer applies: make the same mistake in the current source and regenerate it"
        failed=1
        continue
    fi
    git apply "$patch"
    applied="$patch"
    rm -rf contracts/cache/invariant # replayed failures of another bug prove nothing about this one
    log=$(mktemp)
    if [ "$contract" = "ProtocolInvariantTest" ]; then
        (cd contracts && forge test --match-contract '^ProtocolInvariantTest$' --match-test "$invariant" \
            --skip '*/security/*' '*/gas/*' '*/libraries/*' '*/billing/*' '*/randomness/*' '*/mocks/*' \
            '*/AuditorRegistry.*' '*/SegmentKeys*' '*/TRUSTAudit.*' '*/ProtocolParams.t.sol' \
            '*/LargeCommitteeInvariants.t.sol' >"$log" 2>&1)
    else
        (cd contracts && FORGE_SNAPSHOT_EMIT=false forge test --match-contract "^$contract\$" \
            --match-test "^$invariant(\\(|$)" --skip '*/security/*' '*/gas/*' '*/billing/*' '*/randomness/*' \
            '*/invariant/*' '*/SegmentKeys*' '*/TRUSTAudit.*' '*/ProtocolParams.t.sol' >"$log" 2>&1)
    fi
    if grep -q "\[FAIL" "$log"; then
        echo "ok $name: caught by $invariant ($(grep -o '\[FAIL[^]]*' "$log" | head -1 | cut -c2-100))"
    elif grep -q "\[PASS\] $invariant" "$log"; then
        echo "!! $name: NOT caught by $invariant"
        failed=1
    else
        echo "!! $name: the run did not complete; its log follows"
        tail -20 "$log"
        failed=1
    fi
    rm -f "$log"
    revert
done
rm -rf contracts/cache/invariant
exit "$failed"
