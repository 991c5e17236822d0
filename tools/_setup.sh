# Shared set-up for tools/run, tools/test and tools/bench: a project virtual environment with
# Stockade and its dev tools installed. Sourced, not run. Reinstalls only when pyproject or a C
# source changes.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PYTHON="${PYTHON:-python3}"
VENV="$ROOT/.venv"

if [ ! -x "$VENV/bin/python" ]; then
  echo "stockade: creating virtual environment in .venv" >&2
  "$PYTHON" -m venv "$VENV"
fi

stamp="$VENV/.stockade-setup-stamp"
# The C sources count too: the editable install compiles them in place (the block reader).
want="$(cat pyproject.toml desktop/stockade/*/*.c | sha256sum | cut -d' ' -f1)"
# The compiled parts (desktop/stockade/*/_*.c: the block reader, the hint scan, audit verify's
# check) need a C compiler, and the verify check libcrypto's headers; the build goes on without
# them (Python then does their work, slower), and the tests say so.
ensure_c_compiler() {
  local packages=()
  command -v cc >/dev/null 2>&1 || command -v gcc >/dev/null 2>&1 || packages+=(gcc libc6-dev)
  [ -f /usr/include/openssl/sha.h ] || packages+=(libssl-dev)
  [ ${#packages[@]} -eq 0 ] && return 0
  command -v apt-get >/dev/null 2>&1 || return 0
  echo "stockade: installing what the compiled parts build with: ${packages[*]}" >&2
  local sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${packages[@]}" >/dev/null
}
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  ensure_c_compiler
  echo "stockade: installing Stockade and its dependencies into .venv" >&2
  "$VENV/bin/python" -m pip install --quiet --upgrade pip
  "$VENV/bin/python" -m pip install --quiet -e ".[dev]"
  echo "$want" > "$stamp"
fi

# Qt needs these shared libraries even offscreen; a fresh Debian machine may lack them.
QT_DEBIAN_PACKAGES="libegl1 libgl1 libxkbcommon0 libfontconfig1 libglib2.0-0 libdbus-1-3 fonts-dejavu-core"
# node runs the peer harness's own drivers in the tests of `tools/bench peer`; postgresql
# gives the team-store tests and `tools/bench governance` a real server (they initdb their own
# into a temporary folder and stop it at the end; the package's own cluster is not used).
TEST_DEBIAN_PACKAGES="nodejs postgresql"
ensure_qt_libraries() {
  command -v dpkg-query >/dev/null 2>&1 || return 0
  local missing=()
  for pkg in $QT_DEBIAN_PACKAGES $TEST_DEBIAN_PACKAGES; do
    if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
      missing+=("$pkg")
    fi
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "stockade: installing Debian packages Qt and the tests need: ${missing[*]}" >&2
  local sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}
ensure_qt_libraries
export PATH="$VENV/bin:$PATH"
