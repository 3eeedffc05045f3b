# Prints one summary line for an Autobahn report index (reports/servers/index.json or
# reports/clients/index.json) and exits 1 if any case FAILED (or none ran). Works on Python 2.7 and 3.
import json
import sys

mode, path = sys.argv[1], sys.argv[2]
with open(path) as handle:
    index = json.load(handle)
counts = {}
failed = []
for agent, cases in index.items():
    for case, result in cases.items():
        behavior = result.get("behavior", "?")
        close = result.get("behaviorClose", "?")
        # A case counts as failed if either its behaviour or its closing behaviour failed.
        verdict = "FAILED" if "FAILED" in (behavior, close) else behavior
        counts[verdict] = counts.get(verdict, 0) + 1
        if verdict == "FAILED":
            failed.append("%s (%s/%s)" % (case, behavior, close))
order = ["FAILED", "OK", "NON-STRICT", "INFORMATIONAL", "UNIMPLEMENTED"]
parts = ["%d %s" % (counts.get(name, 0), name) for name in order]
parts += ["%d %s" % (count, name) for name, count in sorted(counts.items()) if name not in order]
print("autobahn %s: %s" % (mode, ", ".join(parts)))
for case in sorted(failed):
    print("  FAILED %s" % case)
sys.exit(1 if failed or not counts else 0)
