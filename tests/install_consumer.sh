#!/usr/bin/env bash
# tests/install_consumer.sh BUILD SCRATCH — installs the built tree into a
# scratch prefix, moves the prefix elsewhere (the package must not remember
# where it was installed), then builds and runs the consumer programs of
# tests/consumer against the moved tree.
set -euo pipefail
build=$1
scratch=$2
rm -rf "$scratch" && mkdir -p "$scratch"
cmake --install "$build" --prefix "$scratch/installed" >/dev/null
mv "$scratch/installed" "$scratch/moved"
"$(dirname "$0")/consumer/check.sh" "$scratch/consumer" "$scratch/moved"
