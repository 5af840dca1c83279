#!/usr/bin/env bash
# Makes a Docker daemon available on a Debian machine with no image registry: installs Debian's
# docker.io and docker-compose (and busybox-static and the JDK's jmods for the local base image, and
# promtool from Debian's prometheus package to check the dashboard's queries) when missing, starts dockerd in the background when `docker info` fails (log: /var/log/kvroute-dockerd.log),
# and waits until it answers. Idempotent; needs root for the installation and the daemon.
set -euo pipefail

need=()
command -v dockerd >/dev/null 2>&1 || need+=(docker.io)
command -v docker-compose >/dev/null 2>&1 || need+=(docker-compose)
[ -x /bin/busybox ] && ! ldd /bin/busybox >/dev/null 2>&1 || need+=(busybox-static)
[ -d /usr/lib/jvm/java-17-openjdk-amd64/jmods ] || need+=(openjdk-17-jmods)
updated=false
export DEBIAN_FRONTEND=noninteractive
if [ "${#need[@]}" -gt 0 ]; then
  echo "setup-docker: installing ${need[*]}"
  apt-get update -q
  updated=true
  apt-get install -y -q "${need[@]}"
fi
if ! command -v promtool >/dev/null 2>&1; then
  echo "setup-docker: installing prometheus (for promtool; the service is not started)"
  [ "$updated" = true ] || apt-get update -q
  apt-get install -y -q --no-install-recommends prometheus
fi

if ! docker info >/dev/null 2>&1; then
  echo "setup-docker: starting dockerd (log /var/log/kvroute-dockerd.log)"
  nohup dockerd >/var/log/kvroute-dockerd.log 2>&1 &
  for _ in $(seq 1 60); do
    docker info >/dev/null 2>&1 && break
    sleep 1
  done
fi
if ! docker info >/dev/null 2>&1; then
  echo "setup-docker: dockerd did not come up; last log lines:" >&2
  tail -n 30 /var/log/kvroute-dockerd.log >&2 || true
  exit 1
fi
docker version --format 'setup-docker: client {{.Client.Version}}, server {{.Server.Version}} (API {{.Server.APIVersion}})'
docker-compose version --short | sed 's/^/setup-docker: docker-compose /'
