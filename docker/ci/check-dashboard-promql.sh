#!/usr/bin/env bash
# Parses every PromQL query of the Grafana dashboard with Prometheus' own parser: the queries become
# recording rules in a temporary rules file ($__rate_interval and other Grafana variables replaced by
# 1m) and `promtool check rules` validates them, and `promtool check config` validates
# deploy/prometheus/prometheus.yml. Needs promtool (Debian package prometheus) and python3.
# (Which metrics the queries name is checked by GrafanaDashboardTest against live scrapes.)
set -euo pipefail
cd "$(dirname "$0")/../.."
command -v promtool >/dev/null || { echo "check-dashboard-promql: promtool missing (apt-get install prometheus)" >&2; exit 1; }

rules="$(mktemp --suffix=.yml)"
trap 'rm -f "$rules"' EXIT
python3 - deploy/grafana/dashboards/kvroute.json >"$rules" <<'PY'
import json, re, sys
dashboard = json.load(open(sys.argv[1]))
print("groups:\n  - name: kvroute-dashboard\n    rules:")
n = 0
for panel in dashboard["panels"]:
    for target in panel.get("targets", []):
        expr = re.sub(r"\$\{?__\w+\}?", "1m", target["expr"])
        n += 1
        print(f"      - record: dashboard:query_{n}")
        print(f"        expr: {json.dumps(expr)}")
print(f"check-dashboard-promql: {n} queries", file=sys.stderr)
PY
promtool check rules "$rules"
promtool check config deploy/prometheus/prometheus.yml
