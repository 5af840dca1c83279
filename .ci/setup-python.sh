#!/usr/bin/env bash
# Installs the Python packages the tests need (.ci/requirements.txt) with this machine's pip.
# Idempotent: pip skips what is installed already. Tests that need them skip without them locally
# and fail without them when CI=true.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v python3 >/dev/null; then
  apt-get update -qq && apt-get install -y -qq python3 python3-pip >/dev/null
fi
if ! python3 -m pip --version >/dev/null 2>&1; then
  apt-get update -qq && apt-get install -y -qq python3-pip >/dev/null
fi
# Debian's externally managed Python refuses a system-wide install unless told otherwise.
# One retry, not pip's five: where the public index is unreachable and a local one (PIP_* settings)
# serves the packages, each of pip's back-off retries cost seconds per package, ~200 s in all.
pip_install=(python3 -m pip install --quiet --disable-pip-version-check --retries 1)
"${pip_install[@]}" -r .ci/requirements.txt \
  || "${pip_install[@]}" --break-system-packages -r .ci/requirements.txt
python3 -c "import msgspec, msgpack, zmq, pydantic; print('python test packages: pydantic', pydantic.VERSION, 'msgspec', msgspec.__version__, \
'msgpack', '.'.join(map(str, msgpack.version)), 'pyzmq', zmq.__version__)"
