#!/usr/bin/env bash
# Proves docs/ARCHITECTURE.md's "Adding an opcode" walk on a copy of the
# tree: a throw-away float unary op, `sinh`, added in the three files the
# walk names (the opcode list, a line of scalar functions, a derivative)
# parses, infers, folds, runs on the device at f32 and bf16 with the
# values numpy gives, and passes the opcode-table test; and leaving out
# either of the last two lines does not compile, saying which list lacks it.
#
#     bash scripts/check_adding_opcode.sh        (CI runs it)
#
# Builds the library, the binary and one unit test in a scratch copy
# (about 3 minutes on 2 cores); the repository is not touched.
set -euo pipefail
src="$(cd "$(dirname "$0")/.." && pwd)"
py=/usr/bin/python3
[ -x "$py" ] || py=python3
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
tree="$work/tree"
mkdir -p "$tree"
git -C "$src" ls-files -z | (cd "$src" && tar --null -T - -cf -) | tar -C "$tree" -xf -
[ -e "$src/../shared" ] && ln -s "$(cd "$src/../shared" && pwd)" "$work/shared"

# The walk: one line in each of three files.
"$py" - "$tree" <<'EOF'
import sys
tree = sys.argv[1]
def insert_after(path, anchor, line):
    p = tree + "/" + path
    s = open(p).read()
    at = s.index(anchor)
    at = s.index("\n", at) + 1
    open(p, "w").write(s[:at] + line + "\n" + s[at:])
insert_after("engine/include/hloscope/hs_opcode.h",
             'X(TAN, "tan", 1, HS_CAT_ELEMENTWISE, UNARY_FLOAT)',
             '    X(SINH, "sinh", 1, HS_CAT_ELEMENTWISE, UNARY_FLOAT)               \\')
insert_after("engine/src/numerics/element_ops.h", "X(TAN, tanf(v), tan(v))",
             "    X(SINH, sinhf(v), sinh(v)) \\")
insert_after("engine/src/autodiff/vjp_elementwise.c", "D(TAN, ",
             "    D(SINH, SCALE(hs__ad_bin(b, HS_OP_ADD, UN(EXP, x), UN(EXP, UN(NEGATE, x))), 0.5f)) \\")
EOF

build="$work/build"
cmake -S "$tree" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHS_BENCH=OFF >/dev/null
cmake --build "$build" -j2 --target hloscope_bin test_opcode_tables >"$work/build.log" 2>&1 ||
    { tail -40 "$work/build.log"; echo "check_adding_opcode: the three-file walk does not build"; exit 1; }
"$build/tests/test_opcode_tables" >"$work/tables.log" 2>&1 ||
    { tail -40 "$work/tables.log"; echo "check_adding_opcode: test_opcode_tables fails with sinh"; exit 1; }
grep -q "sinh" "$work/tables.log" ||
    { echo "check_adding_opcode: the opcode matrix does not list sinh"; exit 1; }

# sinh runs on the device (a parameter, so nothing is folded away) at f32
# and bf16, and folds on a constant, with numpy's values.
mkdir -p "$work/args" "$work/out"
cat >"$work/sinh.hlo" <<'EOF'
HloModule sinh_walk

ENTRY main {
  x = f32[6]{0} parameter(0)
  s = f32[6]{0} sinh(x)
  h = bf16[6]{0} convert(x)
  sh = bf16[6]{0} sinh(h)
  c = f32[2]{0} constant({0.5, -1.25})
  sc = f32[2]{0} sinh(c)
  ROOT t = (f32[6]{0}, bf16[6]{0}, f32[2]{0}) tuple(s, sh, sc)
}
EOF
"$py" -c "import numpy as np; np.save('$work/args/x.npy', np.array([-3, -1.5, -0.25, 0, 0.75, 2.5], np.float32))"
"$build/hloscope" run "$work/sinh.hlo" --args "$work/args" --dump "$work/out" >"$work/run.log" 2>&1 ||
    { cat "$work/run.log"; echo "check_adding_opcode: sinh does not run"; exit 1; }
"$py" - "$work" <<'EOF'
import glob, sys
import numpy as np
w = sys.argv[1]
x = np.load(w + "/args/x.npy")
outs = sorted(glob.glob(w + "/out/output.*.npy"))
assert len(outs) == 3, outs
s, sh, sc = (np.load(p) for p in outs)
want = np.sinh(x.astype(np.float64))
assert np.allclose(s, want, rtol=1e-6, atol=1e-7), (s, want)
# bf16: sinh in f32 of the bf16-rounded input, rounded once (dumped as f32).
assert np.allclose(sh, np.sinh(x.astype(np.float64)), rtol=2 ** -7), (sh, want)
assert np.allclose(sc, np.sinh([0.5, -1.25]), rtol=1e-6), sc
print("check_adding_opcode: sinh runs at f32 and bf16 and folds:", s, sh, sc)
EOF

# Leaving out the scalar line or the derivative does not compile, and the
# error says which list lacks it.
must_fail() { # file line-to-remove expected-message
    cp "$tree/$1" "$work/saved"
    grep -v -F "$2" "$work/saved" >"$tree/$1"
    if cmake --build "$build" -j2 --target hloscope >"$work/fail.log" 2>&1; then
        cp "$work/saved" "$tree/$1"
        echo "check_adding_opcode: leaving '$2' out of $1 still compiles"
        exit 1
    fi
    grep -q "$3" "$work/fail.log" ||
        { tail -20 "$work/fail.log"; echo "check_adding_opcode: no '$3' in the compile error"; exit 1; }
    cp "$work/saved" "$tree/$1"
}
must_fail engine/src/numerics/element_ops.h "X(SINH, sinhf(v), sinh(v))" "no line in HS_FLOAT_UNARY_FUNCTIONS"
must_fail engine/src/autodiff/vjp_elementwise.c "D(SINH," "no line in HS_FLOAT_UNARY_DERIVATIVES"
echo "check_adding_opcode: a float unary op takes three files; a missing line does not compile"
