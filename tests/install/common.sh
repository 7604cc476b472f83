# Sourced by the install tests (run.sh, shared.sh, packages.sh) after they set `build` (the build
# tree) and `test_name`: `src` (the consumer project), `tmp` (a new directory under BUILD/tmp,
# removed on exit; under the build tree, compiler caches keyed on paths below a base directory,
# such as ccache's base_dir, hit from one run to the next), fail MESSAGE, and XDG_STATE_HOME in
# `tmp` (the command's state stays there).
src=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/consumer
mkdir -p "$build/tmp"
tmp=$(mktemp -d "$build/tmp/$test_name.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail() {
  echo "FAIL: $*"
  exit 1
}
export XDG_STATE_HOME=$tmp/state
