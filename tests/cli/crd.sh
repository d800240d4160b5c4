#!/usr/bin/env bash
# crd.sh: `tally validate` checks the objects a CustomResourceDefinition of the input defines
# against its schema (contract section 4, docs/validate.md). tests/crd/widget-crd.yaml is a CRD
# written for this test with one of each rule; tests/crd/widgets.yaml one valid Widget and one per
# broken rule; tests/crd/expected.out the exact report.
#   bash tests/cli/crd.sh path/to/tally
set -u
tally=$1
source tests/cli/lib/harness.sh crd.sh
"$tally" validate tests/crd/ >"$tmp/out" 2>"$tmp/err"
[ $? -eq 1 ] && ok || bad "validate of broken Widgets must exit 1"
if cmp -s tests/crd/expected.out "$tmp/out"; then ok; else bad "the report differs"; diff tests/crd/expected.out "$tmp/out"; fi
# The valid Widget alone, with its CRD: nothing but the warning that one CEL rule (Kubernetes' url
# library) is not evaluated; the quantity rule holds (500m > 0); the transition rule (oldSelf) is for
# updates and says nothing.
sed -n '1,/^---/p' tests/crd/widgets.yaml | sed '$d' >"$tmp/good.yaml"
"$tally" validate tests/crd/widget-crd.yaml "$tmp/good.yaml" >"$tmp/good.out" 2>/dev/null
[ $? -eq 0 ] && ok || { bad "a valid Widget must pass"; cat "$tmp/good.out"; }
grep -q "warning: .*rule .*url(self.home).* not evaluated: it uses getScheme" "$tmp/good.out" && ok || bad "the url rule must be reported as not evaluated"
[ "$(grep -c . "$tmp/good.out")" = 1 ] && ok || { bad "a valid Widget must give one line"; cat "$tmp/good.out"; }
# Without the CRD, the Widgets are a kind tally does not read: notes only, exit 0.
"$tally" validate tests/crd/widgets.yaml >"$tmp/nocrd.out" 2>/dev/null
[ $? -eq 0 ] && [ ! -s "$tmp/nocrd.out" ] && ok || bad "without their CRD the Widgets are only skipped"
# The CRD after the objects it defines is the same as before them.
"$tally" validate tests/crd/widgets.yaml tests/crd/widget-crd.yaml >"$tmp/after.out" 2>/dev/null
cmp -s tests/crd/expected.out "$tmp/after.out" && ok || bad "a CRD read after its objects must check them the same"
echo "crd.sh: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
