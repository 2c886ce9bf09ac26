# tests/python/probe_check.py - the Python frame reader inside this python3 (ctypes), without heaptap
# SPDX-License-Identifier: MIT
#
# argv[1]: libpyf_probe.so. Each check calls probe() from known Python
# functions and compares the spliced stack with what Python itself says
# (function names, this file, the lines of the calls, marked LINE:name).
# Exit 0 = all passed, 77 = this interpreter has no layout in this build.
import ctypes
import sys
import threading

lib = ctypes.CDLL(sys.argv[1])
lib.probe.restype = ctypes.c_int
FILE = __file__
LINES = {}
with open(FILE) as f:
    for no, text in enumerate(f, 1):
        if "# LINE:" in text:
            LINES[text.split("# LINE:")[1].strip()] = no

if lib.probe_start(0) != 1:
    print("skip: no Python frames for this interpreter")
    sys.exit(77)


def stack(raw=False):
    buf = ctypes.create_string_buffer(1 << 16)
    lib.probe(buf, len(buf))  # LINE:stack
    st = [l.split(" ") for l in buf.value.decode().splitlines()]
    if raw:
        return st
    # the first Python frame is this function's
    first = [f for f in st if f[0] == "py"][0]
    if first[1:] != ["stack", FILE, str(LINES["stack"])]:
        print("FAIL innermost", first)
        sys.exit(1)
    return st


def py_frames(st):
    return [(f[1], f[2], int(f[3])) for f in st if f[0] == "py"][1:]


def expect(st, want, what):
    got = py_frames(st)
    if got[: len(want)] != want:
        print("FAIL", what, "want", want, "got", got)
        print("\n".join(" ".join(f) for f in st))
        sys.exit(1)


def inner():
    return stack()  # LINE:inner


def outer():
    return inner()  # LINE:outer


st = outer()  # LINE:module
expect(st, [("inner", FILE, LINES["inner"]), ("outer", FILE, LINES["outer"]),
            ("<module>", FILE, LINES["module"])], "plain calls")
# the Python frames stand right in front of the evaluation loop's C frame
kinds = [f[0] if f[0] == "py" else f[1] for f in st]
i = kinds.index("py")
if kinds[i + 4] != "_PyEval_EvalFrameDefault" or "_PyEval_EvalFrameDefault" in kinds[:i]:
    print("FAIL order", kinds)
    sys.exit(1)


class K:
    def method(self):
        return stack()  # LINE:method


st = K().method()  # LINE:method_call
expect(st, [("K.method", FILE, LINES["method"]), ("<module>", FILE, LINES["method_call"])],
       "qualified name")


def gen():
    yield stack()  # LINE:gen


st = next(gen())  # LINE:gen_call
expect(st, [("gen", FILE, LINES["gen"]), ("<module>", FILE, LINES["gen_call"])], "generator frame")


def via_c(x):
    return stack()  # LINE:via_c


st = list(map(via_c, [1]))[0]  # LINE:map_call
expect(st, [("via_c", FILE, LINES["via_c"]), ("<module>", FILE, LINES["map_call"])], "through C")
# two evaluation loops: the inner one and the call from C (map) between the segments
kinds = [f[0] if f[0] == "py" else f[1] for f in st]
a = kinds.index("py") + 1
b = kinds.index("py", a + 1)
between = kinds[a + 1:b]
if between.count("_PyEval_EvalFrameDefault") != 1:
    print("FAIL two segments", kinds)
    sys.exit(1)

# threads: each its own chain
results = {}


def worker(k):
    results[k] = thread_body(k)  # LINE:worker


def thread_body(k):
    return stack()  # LINE:thread_body


ts = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
for t in ts:
    t.start()
for t in ts:
    t.join()
for k in range(4):
    expect(results[k], [("thread_body", FILE, LINES["thread_body"]), ("worker", FILE, LINES["worker"]),
                        ("Thread.run", threading.__file__, None)][:2], "thread %d" % k)
    names = [f[0] for f in py_frames(results[k])]
    if "<module>" in names or names[-1] != "Thread._bootstrap":
        print("FAIL thread chain", names)
        sys.exit(1)

# switched off: the stack as it was
lib.probe_wanted(0)
st = stack(raw=True)
lib.probe_wanted(1)
if [f for f in st if f[0] == "py"] or "_PyEval_EvalFrameDefault" not in [f[1] for f in st]:
    print("FAIL: Python frames while not wanted")
    sys.exit(1)

# a deep recursion: bounded
def rec(n):
    return stack() if n == 0 else rec(n - 1)  # LINE:rec


st = rec(300)
n = len(py_frames(st))
if n == 0 or n > 128:
    print("FAIL deep: %d Python frames" % n)
    sys.exit(1)
# a sub-interpreter: its frames for the inner evaluation loop, the main interpreter's for the outer
import _xxsubinterpreters as subinterp  # noqa: E402
import tempfile  # noqa: E402

with tempfile.NamedTemporaryFile("r") as out:
    interp = subinterp.create()
    code = """
import ctypes
lib = ctypes.CDLL(%r)
def in_sub():
    buf = ctypes.create_string_buffer(1 << 16)
    lib.probe(buf, len(buf))
    return buf.value.decode()
open(%r, "w").write(in_sub())
""" % (sys.argv[1], out.name)
    subinterp.run_string(interp, code)  # LINE:subinterp
    st = [l.split(" ") for l in out.read().splitlines()]
    subinterp.destroy(interp)
got = [(f[1], f[2], int(f[3])) for f in st if f[0] == "py"]
if got != [("in_sub", "<string>", 6), ("<module>", "<string>", 8), ("<module>", FILE, LINES["subinterp"])]:
    print("FAIL sub-interpreter", got)
    sys.exit(1)
print("ok: %d definitions" % lib.probe_ndefs())
