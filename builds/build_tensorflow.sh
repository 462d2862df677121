#!/usr/bin/env bash
# build_tensorflow.sh - compile a TensorFlow CPU wheel from source for one -march target.
#
# Why: the stock TensorFlow wheel is built for a portable x86-64 baseline, which is why
# TensorFlow prints "rebuild TensorFlow with the appropriate compiler flags" on CPUs with
# AVX-512, VNNI, BF16 or AMX. This script builds the wheel for a chosen -march with the
# toolchain TensorFlow tested for that release (Bazel via Bazelisk, Clang), then re-tags it
# with a PEP 440 local version naming the target, e.g.
#     tensorflow_cpu-2.21.0+march.x86_64_v4-cp311-cp311-linux_x86_64.whl
# so the target is visible in the file name and in `pip show tensorflow_cpu`.
#
# It runs on a bare Linux machine and as the build stage of docker/cpu-compiled.Dockerfile.
# `--dry-run` prints every command it would run, one per line, shell-quoted, and runs none.
# A real build takes hours on many cores and needs several GB of RAM per Bazel job.
# See builds/README.md.

set -euo pipefail

readonly PROG="build_tensorflow.sh"
readonly DEFAULT_TF="2.21.0"
readonly DEFAULT_MARCH="x86-64-v3"
readonly TF_GIT_URL="https://github.com/tensorflow/tensorflow"
readonly WHEEL_NAME="tensorflow_cpu"
# `wheel pack --local-version` (re-tag a wheel, METADATA included) needs wheel >= 0.48.
readonly WHEEL_TOOL_PIN="wheel==0.48.0"
readonly BAZELISK_PIN="@bazel/bazelisk@1.28.1"
# The same pattern as cpustudy.images.validate_march: alphanumeric runs joined by single
# '-', '_' or '.'; at most 64 characters. Anything else never reaches a command line.
readonly MARCH_RE='^[A-Za-z0-9]+([._-][A-Za-z0-9]+)*$'
readonly TF_RE='^[0-9]+\.[0-9]+\.[0-9]+(rc[0-9]+)?$'

die() {
  # die EXIT_CODE MESSAGE...: one line on stderr, then exit.
  local code=$1
  shift
  printf '%s: error: %s\n' "$PROG" "$*" >&2
  exit "$code"
}

note() {
  printf '%s: %s\n' "$PROG" "$*" >&2
}

usage() {
  cat <<EOF
Usage: bash builds/build_tensorflow.sh [options]

Compile a TensorFlow CPU wheel from source for one -march target and write it to --output,
re-tagged as ${WHEEL_NAME}-VERSION+march.TARGET-cpXY-cpXY-linux_ARCH.whl.
On success the last line on stdout is the wheel's path; progress goes to stderr.

Options:
  --march VALUE           -march target (default ${DEFAULT_MARCH}), e.g. x86-64-v2, x86-64-v3
                          (AVX2+FMA), x86-64-v4 (AVX-512), native, skylake-avx512,
                          cascadelake, icelake-server, sapphirerapids, znver3, znver4
  --tf VERSION            TensorFlow release to build (default ${DEFAULT_TF})
  --jobs N                Bazel --jobs (default: number of CPUs)
  --output DIR            where the wheel is written (default ./dist)
  --workdir DIR           where the source is cloned and unpacked
                          (default \${XDG_CACHE_HOME:-~/.cache}/cpustudy/tensorflow-build)
  --python PATH           Python used by ./configure and the wheel tool (default python3)
  --python-version X.Y    Python ABI of the wheel (default: that of --python); TF >= 2.16
                          builds against Bazel's hermetic Python of this version
  --clang PATH            clang binary (default: clang-N / /usr/lib/llvm-N/bin/clang for the
                          Clang major version TensorFlow tested for --tf)
  --dry-run               print every command, exactly, one per line, and run none
  -h, --help              show this help

Pinned toolchains (TensorFlow's tested build configurations; Bazelisk follows the
checkout's .bazelversion, which matches this table for released tags):
  TF 2.20-2.21   Bazel 7.4.1   Clang 18   target //tensorflow/tools/pip_package:wheel
  TF 2.19        Bazel 6.5.0   Clang 18   target //tensorflow/tools/pip_package:wheel
  TF 2.17-2.18   Bazel 6.5.0   Clang 17   target //tensorflow/tools/pip_package:wheel
  TF 2.16        Bazel 6.5.0   Clang 17   target //tensorflow/tools/pip_package:build_pip_package
  TF 2.14-2.15   Bazel 6.1.0   Clang 16   target //tensorflow/tools/pip_package:build_pip_package
                                          (Clang 17 is accepted too)

Prerequisites: git, Python 3 with ${WHEEL_TOOL_PIN} (python3 -m pip install ${WHEEL_TOOL_PIN}),
clang of the major version above (apt-get install clang-18 lld-18), bazelisk
(npm install -g ${BAZELISK_PIN}, or a release binary of bazelbuild/bazelisk);
set BAZELISK=/path/to/bazelisk to use one that is not on PATH.

Exit status: 0 success, 1 a failed step or missing prerequisite, 2 bad arguments.
EOF
}

# --- printing commands exactly -------------------------------------------------------------

shell_quote() {
  # Print one word so that a POSIX shell reads it back unchanged.
  local word=$1 safe='^[A-Za-z0-9_./:=,+@%^-]+$' q="'\\''"
  if [[ $word =~ $safe ]]; then
    printf '%s' "$word"
  else
    printf "'%s'" "${word//\'/$q}"
  fi
}

format_cmd() {
  local out="" word
  for word in "$@"; do
    out+="${out:+ }$(shell_quote "$word")"
  done
  printf '%s' "$out"
}

run() {
  # Dry run: print the command on stdout. Real run: echo it on stderr, run it with its
  # stdout sent to stderr, so that stdout carries only the final wheel path.
  if ((DRY_RUN)); then
    printf '%s\n' "$(format_cmd "$@")"
    return 0
  fi
  printf '+ %s\n' "$(format_cmd "$@")" >&2
  "$@" >&2
}

run_no_input() {
  # As run, with stdin from /dev/null: ./configure then takes its defaults for every
  # question that the TF_* / *_PATH environment variables did not already answer.
  if ((DRY_RUN)); then
    printf '%s </dev/null\n' "$(format_cmd "$@")"
    return 0
  fi
  printf '+ %s </dev/null\n' "$(format_cmd "$@")" >&2
  "$@" </dev/null >&2
}

# --- arguments ------------------------------------------------------------------------------

MARCH=$DEFAULT_MARCH
TF_VERSION=$DEFAULT_TF
JOBS=""
OUTPUT_DIR="dist"
WORK_DIR="${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/cpustudy/tensorflow-build"
PYTHON="python3"
PY_VERSION=""
CLANG=""
DRY_RUN=0

set_option() {
  local name=$1 value=$2
  case $name in
    --march) MARCH=$value ;;
    --tf) TF_VERSION=$value ;;
    --jobs) JOBS=$value ;;
    --output) OUTPUT_DIR=$value ;;
    --workdir) WORK_DIR=$value ;;
    --python) PYTHON=$value ;;
    --python-version) PY_VERSION=$value ;;
    --clang) CLANG=$value ;;
    *) die 2 "unknown option '$name' (see --help)" ;;
  esac
}

while (($# > 0)); do
  case $1 in
    -h | --help)
      usage
      exit 0
      ;;
    --dry-run) DRY_RUN=1 ;;
    --march | --tf | --jobs | --output | --workdir | --python | --python-version | --clang)
      (($# >= 2)) || die 2 "option $1 needs a value (see --help)"
      set_option "$1" "$2"
      shift
      ;;
    --*=*) set_option "${1%%=*}" "${1#*=}" ;;
    *) die 2 "unknown argument '$1' (see --help)" ;;
  esac
  shift
done

if ((${#MARCH} > 64)) || ! [[ $MARCH =~ $MARCH_RE ]]; then
  die 2 "invalid --march $(shell_quote "$MARCH"): use letters and digits joined by single '-', '_' or '.', e.g. x86-64-v4, sapphirerapids, native"
fi
[[ $TF_VERSION =~ $TF_RE ]] ||
  die 2 "invalid --tf $(shell_quote "$TF_VERSION"): expected a release such as ${DEFAULT_TF}"
if [[ -n $JOBS ]] && ! [[ $JOBS =~ ^[1-9][0-9]*$ ]]; then
  die 2 "invalid --jobs $(shell_quote "$JOBS"): expected a positive integer"
fi
if [[ -n $PY_VERSION ]] && ! [[ $PY_VERSION =~ ^3\.[0-9]+$ ]]; then
  die 2 "invalid --python-version $(shell_quote "$PY_VERSION"): expected 3.X, e.g. 3.11"
fi
[[ -n $OUTPUT_DIR ]] || die 2 "--output must not be empty"
[[ -n $WORK_DIR ]] || die 2 "--workdir must not be empty"

# --- the tested-build-configuration table ---------------------------------------------------

TF_MINOR=${TF_VERSION%.*}
case $TF_MINOR in
  2.20 | 2.21)
    BAZEL_PIN="7.4.1" CLANG_MAJORS="18" BUILD_TARGET="wheel"
    ;;
  2.19)
    BAZEL_PIN="6.5.0" CLANG_MAJORS="18" BUILD_TARGET="wheel"
    ;;
  2.17 | 2.18)
    BAZEL_PIN="6.5.0" CLANG_MAJORS="17" BUILD_TARGET="wheel"
    ;;
  2.16)
    BAZEL_PIN="6.5.0" CLANG_MAJORS="17" BUILD_TARGET="build_pip_package"
    ;;
  2.14 | 2.15)
    BAZEL_PIN="6.1.0" CLANG_MAJORS="16 17" BUILD_TARGET="build_pip_package"
    ;;
  *)
    die 2 "unsupported --tf ${TF_VERSION}: supported are 2.14.x to 2.21.x (2.14, 2.15, 2.16, 2.17, 2.18, 2.19, 2.20, 2.21); add a row to the table in builds/build_tensorflow.sh for others"
    ;;
esac
CLANG_WANT=${CLANG_MAJORS%% *}

# --- environment ----------------------------------------------------------------------------

if [[ -n ${USE_BAZEL_VERSION:-} ]]; then
  note "ignoring USE_BAZEL_VERSION=${USE_BAZEL_VERSION}: Bazelisk follows the checkout's .bazelversion"
  unset USE_BAZEL_VERSION
fi

[[ $OUTPUT_DIR == /* ]] || OUTPUT_DIR="$PWD/$OUTPUT_DIR"
[[ $WORK_DIR == /* ]] || WORK_DIR="$PWD/$WORK_DIR"

if [[ $(uname -s) != Linux ]]; then
  if ((DRY_RUN)); then
    note "note: a real run needs Linux; this is $(uname -s)"
  else
    die 1 "this script builds Linux wheels only; this is $(uname -s)"
  fi
fi
ARCH=$(uname -m)

missing=()

if ! command -v git >/dev/null 2>&1; then
  missing+=("git (apt-get install git)")
fi

PYTHON_BIN=""
if PYTHON_BIN=$(command -v "$PYTHON" 2>/dev/null) && [[ -n $PYTHON_BIN ]]; then
  HOST_PY_VERSION=$("$PYTHON_BIN" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
  if ! "$PYTHON_BIN" -m wheel pack --help 2>/dev/null | grep -q -- '--local-version'; then
    missing+=("the Python wheel tool >= 0.48 for ${PYTHON_BIN} (${PYTHON_BIN} -m pip install ${WHEEL_TOOL_PIN})")
  fi
else
  PYTHON_BIN=$PYTHON
  HOST_PY_VERSION=""
  missing+=("${PYTHON} (apt-get install python3 python3-venv, or pass --python PATH)")
fi
PY_VERSION=${PY_VERSION:-${HOST_PY_VERSION:-3.11}}
PY_TAG="cp${PY_VERSION/./}"
if [[ $BUILD_TARGET == build_pip_package && -n $HOST_PY_VERSION && $PY_VERSION != "$HOST_PY_VERSION" ]]; then
  die 2 "--python-version ${PY_VERSION} differs from ${PYTHON_BIN} (${HOST_PY_VERSION}); TensorFlow ${TF_MINOR} builds for the Python it is configured with"
fi

clang_major() {
  # The major version of a clang binary, or nothing.
  local out
  out=$("$1" --version 2>/dev/null || true)
  out=$(printf '%s\n' "$out" | sed -n -E 's/.*clang version ([0-9]+).*/\1/p')
  printf '%s' "${out%%$'\n'*}"
}

if [[ -z $CLANG ]]; then
  for major in $CLANG_MAJORS; do
    if [[ -x /usr/lib/llvm-$major/bin/clang ]]; then
      CLANG=/usr/lib/llvm-$major/bin/clang
    elif command -v "clang-$major" >/dev/null 2>&1; then
      CLANG=$(command -v "clang-$major")
    fi
    [[ -z $CLANG ]] || break
  done
  if [[ -z $CLANG ]] && command -v clang >/dev/null 2>&1; then
    CLANG=$(command -v clang)
  fi
fi
if [[ -z $CLANG ]]; then
  missing+=("clang ${CLANG_WANT} (apt-get install clang-${CLANG_WANT} lld-${CLANG_WANT}, or the LLVM apt repository)")
  CLANG=/usr/lib/llvm-${CLANG_WANT}/bin/clang
elif ! [[ -x $CLANG ]]; then
  missing+=("clang at ${CLANG} (not an executable file)")
else
  found_major=$(clang_major "$CLANG")
  if ! [[ " $CLANG_MAJORS " == *" ${found_major:-none} "* ]]; then
    note "warning: ${CLANG} is clang ${found_major:-of unknown version}; TensorFlow ${TF_MINOR} was tested with clang ${CLANG_MAJORS// / or } (apt-get install clang-${CLANG_WANT})"
  fi
fi

BAZELISK=${BAZELISK:-bazelisk}
if BAZELISK_BIN=$(command -v "$BAZELISK" 2>/dev/null) && [[ -n $BAZELISK_BIN ]]; then
  :
else
  BAZELISK_BIN=$BAZELISK
  missing+=("bazelisk (npm install -g ${BAZELISK_PIN}, or a release binary of bazelbuild/bazelisk; or set BAZELISK=PATH)")
fi

if ((${#missing[@]} > 0)); then
  joined=$(printf '%s; ' "${missing[@]}")
  joined=${joined%; }
  if ((DRY_RUN)); then
    note "note: a real run would stop here; missing prerequisites: ${joined}"
  else
    die 1 "missing prerequisites: ${joined}"
  fi
fi

if [[ -z $JOBS ]]; then
  JOBS=$(nproc 2>/dev/null || getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)
fi

# --- names ------------------------------------------------------------------------------------

SRC_DIR="$WORK_DIR/tensorflow-$TF_VERSION"
UNPACK_DIR="$WORK_DIR/unpacked"
# PEP 440 local version: x86-64-v4 -> march.x86_64_v4 (no '-' may appear in a wheel's version).
LOCAL_LABEL="march.$(printf '%s' "${MARCH//-/_}" | tr '[:upper:]' '[:lower:]')"
WHEEL_TAGS="${PY_TAG}-${PY_TAG}-linux_${ARCH}"
BUILT_WHEEL_NAME="${WHEEL_NAME}-${TF_VERSION}-${WHEEL_TAGS}.whl"
FINAL_WHEEL="$OUTPUT_DIR/${WHEEL_NAME}-${TF_VERSION}+${LOCAL_LABEL}-${WHEEL_TAGS}.whl"
if [[ $BUILD_TARGET == wheel ]]; then
  WHEEL_HOUSE="$SRC_DIR/bazel-bin/tensorflow/tools/pip_package/wheel_house"
else
  WHEEL_HOUSE="$WORK_DIR/wheelhouse"
fi

# --- steps ------------------------------------------------------------------------------------

run mkdir -p "$WORK_DIR"

if [[ -e $SRC_DIR ]]; then
  have_tag=$(git -C "$SRC_DIR" describe --tags --exact-match HEAD 2>/dev/null || true)
  if [[ $have_tag != "v$TF_VERSION" ]]; then
    die 1 "$SRC_DIR exists but is not a checkout of v$TF_VERSION (found: ${have_tag:-no tag}); remove it or pass another --workdir"
  fi
  note "reusing the checkout of v$TF_VERSION in $SRC_DIR"
else
  run git clone --depth 1 --branch "v$TF_VERSION" "$TF_GIT_URL" "$SRC_DIR"
fi

run cd "$SRC_DIR"

if ((DRY_RUN)); then
  note "note: bazelisk will run the Bazel of the checkout's .bazelversion (${BAZEL_PIN} for TF ${TF_MINOR})"
else
  repo_bazel=$(tr -d '[:space:]' <"$SRC_DIR/.bazelversion" 2>/dev/null || true)
  if [[ -n $repo_bazel && $repo_bazel != "$BAZEL_PIN" ]]; then
    note "note: .bazelversion says ${repo_bazel}, the table says ${BAZEL_PIN}; bazelisk follows .bazelversion"
  fi
fi

run_no_input env \
  TF_NEED_CUDA=0 \
  TF_NEED_ROCM=0 \
  TF_NEED_CLANG=1 \
  "CLANG_COMPILER_PATH=$CLANG" \
  "PYTHON_BIN_PATH=$PYTHON_BIN" \
  USE_DEFAULT_PYTHON_LIB_PATH=1 \
  "TF_PYTHON_VERSION=$PY_VERSION" \
  "CC_OPT_FLAGS=-march=$MARCH -Wno-sign-compare" \
  TF_SET_ANDROID_WORKSPACE=0 \
  ./configure

bazel_args=(build --config=opt "--copt=-march=$MARCH" "--jobs=$JOBS")
if [[ $TF_MINOR != 2.14 && $TF_MINOR != 2.15 ]]; then
  bazel_args+=("--repo_env=HERMETIC_PYTHON_VERSION=$PY_VERSION")
fi
if [[ $BUILD_TARGET == wheel ]]; then
  bazel_args+=("--repo_env=WHEEL_NAME=$WHEEL_NAME" //tensorflow/tools/pip_package:wheel)
  run "$BAZELISK_BIN" "${bazel_args[@]}"
else
  bazel_args+=(//tensorflow/tools/pip_package:build_pip_package)
  run "$BAZELISK_BIN" "${bazel_args[@]}"
  run rm -rf "$WHEEL_HOUSE"
  run ./bazel-bin/tensorflow/tools/pip_package/build_pip_package --project_name "$WHEEL_NAME" "$WHEEL_HOUSE"
fi

BUILT_WHEEL="$WHEEL_HOUSE/$BUILT_WHEEL_NAME"
if ((!DRY_RUN)) && [[ ! -f $BUILT_WHEEL ]]; then
  # The platform tag may differ from the prediction (e.g. manylinux); take the one wheel there.
  shopt -s nullglob
  candidates=("$WHEEL_HOUSE/${WHEEL_NAME}-${TF_VERSION}-"*.whl)
  shopt -u nullglob
  ((${#candidates[@]} == 1)) ||
    die 1 "expected one ${WHEEL_NAME}-${TF_VERSION}-*.whl in ${WHEEL_HOUSE}, found ${#candidates[@]}"
  BUILT_WHEEL=${candidates[0]}
  built_tags=${BUILT_WHEEL##*/"${WHEEL_NAME}-${TF_VERSION}"-}
  FINAL_WHEEL="$OUTPUT_DIR/${WHEEL_NAME}-${TF_VERSION}+${LOCAL_LABEL}-${built_tags}"
fi

# Re-tag: the local version goes into the file name, the .dist-info name and METADATA alike,
# so pip and importlib.metadata report 2.21.0+march.x86_64_v4 (a bare rename would not).
run rm -rf "$UNPACK_DIR"
run "$PYTHON_BIN" -m wheel unpack --dest "$UNPACK_DIR" "$BUILT_WHEEL"
run mkdir -p "$OUTPUT_DIR"
run "$PYTHON_BIN" -m wheel pack --local-version "$LOCAL_LABEL" --dest-dir "$OUTPUT_DIR" "$UNPACK_DIR/${WHEEL_NAME}-${TF_VERSION}"
run rm -rf "$UNPACK_DIR"

if ((DRY_RUN)); then
  note "dry run: would write ${FINAL_WHEEL}"
  exit 0
fi
[[ -f $FINAL_WHEEL ]] || die 1 "the re-tagged wheel ${FINAL_WHEEL} was not written"
note "built ${FINAL_WHEEL}"
note "install it with: pip install --no-deps --force-reinstall ${FINAL_WHEEL}"
note "register it with: cpustudy builds setup source --wheel ${FINAL_WHEEL}"
printf '%s\n' "$FINAL_WHEEL"
