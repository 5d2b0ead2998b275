#!/usr/bin/env bash
# Proves docs/ARCHITECTURE.md's "Adding an opcode" walk on a copy of the
# tree: a throw-away float unary op, `sinh`, and a throw-away float binary
# op, `hypot`, each added in the three files the walk names (the opcode
# list, a line of scalar functions, a derivative), parse, infer, fold,
# run on the device at f32 and bf16 with the values numpy gives, and pass
# the opcode-table test; and leaving out either of the last two lines of
# either op does not compile, saying which list lacks it.
#
#     bash scripts/check_adding_opcode.sh        (CI runs it)
#
# Builds the library, the binary and one unit test in a scratch copy
# (about 5 minutes on 2 cores); the repository is not touched.
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

# The walk: one line in each of three files, per op.
"$py" - "$tree" <<'EOF'
import sys
tree = sys.argv[1]
def insert_after(path, anchor, line):
    p = tree + "/" + path
    s = open(p).read()
    at = s.index(anchor)
    at = s.index("\n", at) + 1
    open(p, "w").write(s[:at] + line + "\n" + s[at:])
def insert_before(path, anchor, line):
    p = tree + "/" + path
    s = open(p).read()
    at = s.rindex("\n", 0, s.index(anchor)) + 1
    open(p, "w").write(s[:at] + line + "\n" + s[at:])
insert_after("engine/include/hloscope/hs_opcode.h",
             'X(TAN, "tan", 1, HS_CAT_ELEMENTWISE, UNARY_FLOAT)',
             '    X(SINH, "sinh", 1, HS_CAT_ELEMENTWISE, UNARY_FLOAT)               \\')
insert_after("engine/src/numerics/element_ops.h", "X(TAN, tanf(v), tan(v))",
             "    X(SINH, sinhf(v), sinh(v)) \\")
insert_after("engine/src/autodiff/vjp_elementwise.c", "D(TAN, ",
             "    D(SINH, SCALE(hs__ad_bin(b, HS_OP_ADD, UN(EXP, x), UN(EXP, UN(NEGATE, x))), 0.5f)) \\")
# hypot(x, z) = sqrt(x^2 + z^2): d/dx = x / y, d/dz = z / y.
insert_after("engine/include/hloscope/hs_opcode.h",
             'X(ATAN2, "atan2", 2, HS_CAT_ELEMENTWISE, BINARY_ANY)',
             '    X(HYPOT, "hypot", 2, HS_CAT_ELEMENTWISE, BINARY_ANY)              \\')
insert_before("engine/src/numerics/element_ops.h", "X(ATAN2, atan2f(a, b), atan2(a, b))",
              "    X(HYPOT, hypotf(a, b), hypot(a, b)) \\")
insert_before("engine/src/autodiff/vjp_elementwise.c", "N(REMAINDER)",
              "    D(HYPOT, NONE, MUL(b, gy, DIV(b, x, y)), MUL(b, gy, DIV(b, z, y))) \\")
EOF

build="$work/build"
cmake -S "$tree" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHS_BENCH=OFF >/dev/null
cmake --build "$build" -j2 --target hloscope_bin test_opcode_tables >"$work/build.log" 2>&1 ||
    { tail -40 "$work/build.log"; echo "check_adding_opcode: the three-file walks do not build"; exit 1; }
"$build/tests/test_opcode_tables" >"$work/tables.log" 2>&1 ||
    { tail -40 "$work/tables.log"; echo "check_adding_opcode: test_opcode_tables fails with sinh and hypot"; exit 1; }
for op in sinh hypot; do
    grep -q "$op" "$work/tables.log" ||
        { echo "check_adding_opcode: the opcode matrix does not list $op"; exit 1; }
done

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

# hypot runs on the device (parameters) at f32 and bf16, and folds on two
# constants: the compiled module holds a constant where that hypot was,
# with numpy's values.
cat >"$work/hypot.hlo" <<'EOF'
HloModule hypot_walk

ENTRY main {
  x = f32[6]{0} parameter(0)
  z = f32[6]{0} parameter(1)
  s = f32[6]{0} hypot(x, z)
  hx = bf16[6]{0} convert(x)
  hz = bf16[6]{0} convert(z)
  sh = bf16[6]{0} hypot(hx, hz)
  c = f32[3]{0} constant({0.5, -1.25, 3})
  d = f32[3]{0} constant({2, 0.75, -4})
  sc = f32[3]{0} hypot(c, d)
  ROOT t = (f32[6]{0}, bf16[6]{0}, f32[3]{0}) tuple(s, sh, sc)
}
EOF
rm -rf "$work/args" "$work/out"
mkdir -p "$work/args" "$work/out"
"$py" -c "
import numpy as np
np.save('$work/args/x.npy', np.array([-3, -1.5, -0.25, 0, 0.75, 2.5], np.float32))
np.save('$work/args/z.npy', np.array([4, 2, 0.5, -1, 1e-3, -7], np.float32))"
"$build/hloscope" run "$work/hypot.hlo" --args "$work/args" --dump "$work/out" >"$work/run.log" 2>&1 ||
    { cat "$work/run.log"; echo "check_adding_opcode: hypot does not run"; exit 1; }
"$build/hloscope" compile "$work/hypot.hlo" >"$work/compiled.hlo" 2>"$work/compile.log" ||
    { cat "$work/compile.log"; echo "check_adding_opcode: hypot does not compile"; exit 1; }
"$py" - "$work" <<'EOF'
import glob, re, sys
import numpy as np
w = sys.argv[1]
x = np.load(w + "/args/x.npy").astype(np.float64)
z = np.load(w + "/args/z.npy").astype(np.float64)
outs = sorted(glob.glob(w + "/out/output.*.npy"))
assert len(outs) == 3, outs
s, sh, sc = (np.load(p) for p in outs)
want = np.hypot(x, z)
assert np.allclose(s, want, rtol=1e-6), (s, want)
# bf16: hypot in f32 of the bf16-rounded inputs, rounded once.
assert np.allclose(sh, want, rtol=2 ** -7), (sh, want)
cw = np.hypot([0.5, -1.25, 3], [2, 0.75, -4])
assert np.allclose(sc, cw, rtol=1e-6), (sc, cw)
# Folded: the compiled module keeps the two hypots of the parameters and
# has a constant with the folded values where the third was.
text = open(w + "/compiled.hlo").read()
assert text.count(" hypot(") == 2, text
folded = re.findall(r"f32\[3\]\{0\} constant\(\{([^}]*)\}\)", text)
assert any(np.allclose([float(v) for v in f.split(",")], cw, rtol=1e-6)
           for f in folded), (folded, cw)
print("check_adding_opcode: hypot runs at f32 and bf16 and folds:", s, sh, sc)
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
must_fail engine/src/numerics/element_ops.h "X(HYPOT, hypotf(a, b), hypot(a, b))" "no line in HS_FLOAT_BINARY_FUNCTIONS"
must_fail engine/src/autodiff/vjp_elementwise.c "D(HYPOT," "no line in HS_FLOAT_BINARY_DERIVATIVES"
echo "check_adding_opcode: a float unary or binary op takes three files; a missing line does not compile"
