#!/usr/bin/env python3
"""temper's Python golden runner: a task's golden.py (PyTorch) run on the CPU, in its own process.

temper starts it once per case and input set, before any candidate code, with the input bundle
(include/temper/bundle.h) temper wrote; it writes two output bundles in the format the C++ goldens
write: the fp64 golden (floating inputs upcast to float64, the official evaluator's fp64 CPU
golden) and the same-precision run (the same function on the inputs in the case's dtype, the
official checker's same-precision reference). Both record each output's dtype, the dtype the
candidate must produce, which is the dtype the same-precision run returns.

The function is the one the official evaluator picks (the caller resolves the name from
proto.yaml's schema and passes it with the operator-name fallback); `<name>_oracle` replaces it
for the fp64 run and `<name>_bench` for the same-precision run where golden.py defines them.

Exit status: 0 done, 1 the golden failed (message on stderr), 2 usage, 3 the golden needs an NPU.

With --serve it is instead the PyTorch reference arm of a timing job (`temper judge --reference
torch`): a long-lived worker that speaks temper's worker protocol (src/backend/protocol.h,
version 3; commands on fd 3, replies on fd 4, the tensor arena on fd 5), as temper-worker does for
C++ kernels. It calls the same function in the case's dtype (the same-precision run) on the
arena's inputs, at torch's thread count from --threads, times exactly the call (the monotonic
clock and the thread's CPU time), and copies the outputs into the arena after the timer stops.
With --serve --forkserver it imports torch once and forks such a worker for every request on fd 3
(src/backend/forkserver.h): a timing job starts a new worker for every life, and the import costs
more than most cases' measurement. With --forkserver alone it forks a golden run per request,
its bundle paths read from fd 3: a timing job's sampled check runs a golden per checked call.
"""

import argparse
import importlib.util
import mmap
import os
import re
import struct
import sys
import time
import traceback

BUNDLE_MAGIC = "TEMPER-BUNDLE 1"
ALIGN = 64


class GoldenError(Exception):
    """A problem of the task's golden (or its inputs): reported, never a traceback of ours."""


# --- bundles -------------------------------------------------------------------------------------

def read_bundle(path):
    """Returns (attrs: dict name -> value, tensors: list of (name, dtype, shape, bytes), groups).
    Version 2 bundles add `list NAME COUNT` (its COUNT element tensor lines follow) and
    `absent NAME` lines; groups is then [(name, kind, first tensor, count)] per declared input,
    as bundle.h's Bundle::groups; it is empty for version 1 (each tensor its own input)."""
    with open(path, "rb") as f:
        data = f.read()
    end = data.find(b"\nend\n")
    magic = data[:data.find(b"\n")].decode(errors="replace")
    if magic not in (BUNDLE_MAGIC, "TEMPER-BUNDLE 2") or end < 0:
        raise GoldenError(f"{path}: not a temper bundle")
    grouped = magic == "TEMPER-BUNDLE 2"
    header_len = end + len(b"\nend\n")
    data_start = (header_len + ALIGN - 1) // ALIGN * ALIGN
    attrs, tensors, groups = {}, [], []
    list_left = 0
    for line in data[:end].decode().split("\n")[1:]:
        words = line.split(" ")
        if words[0] == "attr":
            name, kind, rest = words[1], words[2], words[3:]
            if kind in ("int", "bool"):
                attrs[name] = int(rest[0]) if kind == "int" else rest[0] != "0"
            elif kind == "float":
                attrs[name] = float(rest[0])
            elif kind == "string":
                attrs[name] = line.split(" ", 3)[3] if len(words) > 3 else ""
            elif kind in ("ints", "floats"):
                conv = int if kind == "ints" else float
                attrs[name] = [conv(v) for v in rest[1:1 + int(rest[0])]]
            else:
                raise GoldenError(f"{path}: unknown attr kind '{kind}'")
        elif words[0] == "tensor":
            name, dtype, rank = words[1], words[2], int(words[3])
            shape = [int(d) for d in words[4:4 + rank]]
            offset, nbytes = int(words[4 + rank]), int(words[5 + rank])
            start = data_start + offset
            tensors.append((name, dtype, shape, data[start:start + nbytes]))
            if list_left:
                list_left -= 1
            elif grouped:
                groups.append((name, "tensor", len(tensors) - 1, 1))
        elif grouped and not list_left and words[0] in ("list", "absent"):
            count = int(words[2]) if words[0] == "list" else 0
            groups.append((words[1], words[0], len(tensors), count))
            list_left = count
        else:
            raise GoldenError(f"{path}: unexpected header line: {line}")
    return attrs, tensors, groups


def format_attr(name, value):
    if isinstance(value, str):
        return f"attr {name} string {value}"
    raise GoldenError(f"cannot write attr {name}")


def write_bundle(path, attrs, tensors):
    """attrs: dict name -> str; tensors: list of (name, dtype, shape, bytes)."""
    lines = [BUNDLE_MAGIC] + [format_attr(k, v) for k, v in attrs.items()]
    offset = 0
    for name, dtype, shape, raw in tensors:
        lines.append(" ".join(["tensor", name, dtype, str(len(shape))] + [str(d) for d in shape]
                              + [str(offset), str(len(raw))]))
        offset += (len(raw) + ALIGN - 1) // ALIGN * ALIGN
    header = ("\n".join(lines) + "\nend\n").encode()
    header += b"\0" * ((-len(header)) % ALIGN)
    with open(path, "wb") as f:
        f.write(header)
        for _, _, _, raw in tensors:
            f.write(raw)
            f.write(b"\0" * ((-len(raw)) % ALIGN))


# --- torch <-> bundle ----------------------------------------------------------------------------

def dtype_table(torch):
    return {
        "float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16,
        "float64": torch.float64, "int8": torch.int8, "uint8": torch.uint8, "int16": torch.int16,
        "int32": torch.int32, "int64": torch.int64, "bool": torch.bool,
    }


def to_tensor(torch, name, dtype, shape, raw):
    table = dtype_table(torch)
    if dtype not in table:
        raise GoldenError(f"input {name}: unsupported dtype {dtype}")
    flat = torch.frombuffer(bytearray(raw), dtype=table[dtype]) if raw else torch.empty(0, dtype=table[dtype])
    return flat.reshape(shape)


def dtype_name(torch, dt):
    for name, value in dtype_table(torch).items():
        if value == dt:
            return name
    raise GoldenError(f"the golden returned a tensor of dtype {dt}, which temper does not know")


def group_inputs(tensors, groups, input_names):
    """The bundle's tensors as the golden's inputs, in declared order: a tensor per declared input,
    a list for a tensor-list input, None for an input the case leaves absent. A version 2 bundle
    says which is which (groups); in a version 1 bundle tensors named NAME[0], NAME[1], ... form
    list NAME and a declared input without tensors is absent."""
    if groups:
        by_group = {name: (kind, tensors[first:first + count]) for name, kind, first, count in groups}
        names = input_names or [g[0] for g in groups]
        grouped = []
        for name in names:
            kind, members = by_group.get(name, ("absent", []))
            grouped.append(None if kind == "absent" else list(members) if kind == "list" else members[0])
        return grouped
    by_name, lists = {}, {}
    for t in tensors:
        m = re.fullmatch(r"(.+)\[(\d+)\]", t[0])
        if m:
            lists.setdefault(m.group(1), []).append((int(m.group(2)), t))
        else:
            by_name[t[0]] = t
    names = input_names or [t[0] for t in tensors if not re.fullmatch(r".+\[\d+\]", t[0])] + list(lists)
    grouped = []
    for name in names:
        if name in lists:
            grouped.append([t for _, t in sorted(lists[name], key=lambda p: p[0])])
        else:
            grouped.append(by_name.get(name))
    return grouped


# --- the golden function -------------------------------------------------------------------------

def load_module(path):
    with open(path, encoding="utf-8") as f:
        source = f.read()
    if re.search(r"^\s*(import|from)\s+torch_npu\b", source, re.MULTILINE):
        print(f"golden: {path} imports torch_npu, which needs an Ascend NPU; give the task a CPU golden "
              "in temper.yaml (`golden: golden.cpp`, or a golden.py without torch_npu)", file=sys.stderr)
        sys.exit(3)
    spec = importlib.util.spec_from_file_location("temper_task_golden", path)
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as e:  # the task's code: its failure is the task's error
        raise GoldenError(f"importing {path} failed: {type(e).__name__}: {e}") from e
    return module


def pick_function(module, names, path):
    """The first of `names` golden.py defines (the official loader's rule: the schema's function
    name, then the operator name in lower case), with its optional _oracle and _bench hooks."""
    for name in names:
        if callable(getattr(module, name, None)):
            base = names[0]  # the hooks are named after the schema's function, as the loader does
            return (getattr(module, name), getattr(module, base + "_oracle", None),
                    getattr(module, base + "_bench", None), name)
    raise GoldenError(f"{path} defines none of {', '.join(names)} (the function the official evaluator calls)")


def classify_params(fn):
    """(tensor params in signature order, tensor-list params, attr params) by annotation, as the
    official ParamBuilder classifies them."""
    import inspect
    tensors, lists, attrs = [], [], []
    for name, p in inspect.signature(fn).parameters.items():
        ann = "" if p.annotation is inspect.Parameter.empty else str(p.annotation)
        if "List[" in ann and "Tensor" in ann or "list[" in ann and "Tensor" in ann:
            lists.append(name)
        elif "Tensor" in ann:
            tensors.append(name)
        else:
            attrs.append(name)
    return tensors, lists, attrs


def build_params(fn, inputs, input_names, attrs):
    """Keyword arguments for fn. An input binds to the parameter of its name (proto.yaml's input
    names are golden.py's parameter names); one whose name is not a parameter takes the next
    unbound tensor parameter in the official ParamBuilder's order (plain tensors, then tensor
    lists). An absent input leaves its parameter at its default; attrs bind by name."""
    import inspect
    sig = inspect.signature(fn)
    tensors, lists, attr_names = classify_params(fn)
    params, positional = {}, []
    for name, value in zip(input_names, inputs):
        if name in sig.parameters:
            if value is not None:
                params[name] = [value] if name in lists and not isinstance(value, list) else value
        else:
            positional.append(value)
    free = [n for n in tensors + lists if n not in params and n not in input_names]
    if len(positional) > len(free):
        raise GoldenError(f"the golden has no parameter for {len(positional) - len(free)} of the task's inputs")
    for name, value in zip(free, positional):
        if value is not None:
            params[name] = [value] if name in lists and not isinstance(value, list) else value
    for name in attr_names:
        if name in params:
            continue
        if name in attrs:
            params[name] = attrs[name]
        elif sig.parameters[name].default is inspect.Parameter.empty:
            raise GoldenError(f"the golden's parameter '{name}' is neither an input nor a case attribute")
    return params


def convert(torch, inputs, target):
    """Floating tensors to `target` (None: unchanged); integer and bool tensors stay as they are."""
    def one(t):
        return t.to(target) if target is not None and t is not None and t.is_floating_point() else t
    return [[one(s) for s in x] if isinstance(x, list) else one(x) for x in inputs]


def flatten_outputs(result, output_names):
    """[(name, tensor)] from what the golden returned: a tensor, or a tuple with one entry per
    declared output; a list entry is a tensor-list output (NAME[0], NAME[1], ...)."""
    # A list is one tensor-list output when the task declares one output, else one value per output.
    several = isinstance(result, tuple) or (isinstance(result, list) and len(output_names) > 1)
    values = list(result) if several else [result]
    # Fewer values than declared outputs: the trailing ones are optional outputs this case leaves
    # absent (unique without return_inverse); more is an error.
    if output_names and len(values) > len(output_names):
        raise GoldenError(f"the golden returned {len(values)} outputs, the task declares {len(output_names)} "
                          f"({', '.join(output_names)})")
    names = output_names or [f"out{k}" for k in range(len(values))]
    flat = []
    for name, v in zip(names, values):
        if v is None:  # an optional output this case does not produce
            continue
        if isinstance(v, (list, tuple)):
            flat += [(f"{name}[{k}]", t) for k, t in enumerate(v)]
        else:
            flat.append((name, v))
    return flat


def run(torch, fn, inputs, input_names, attrs, target):
    with torch.no_grad():
        return fn(**build_params(fn, convert(torch, inputs, target), input_names, attrs))


def is_dtype_refusal(e):
    text = str(e)
    return "not implemented for" in text or "expected scalar type" in text or "dtype" in text.lower()


def golden_one(torch, functions, declared, output_names, in_path, fp64_path, lowp_path):
    """One input bundle: the same-precision run, the fp64 golden, both output bundles."""
    fn, oracle, bench = functions
    attrs, raw, groups = read_bundle(in_path)
    grouped = group_inputs(raw, groups, declared)
    input_names = declared or ([g[0] for g in groups] if groups else
                               [t[0].split("[")[0] for t in raw if not t[0].endswith("]") or t[0].endswith("[0]")])
    inputs = [None if g is None else [to_tensor(torch, *t) for t in g] if isinstance(g, list)
              else to_tensor(torch, *g) for g in grouped]

    # The same-precision run first: its dtypes are the dtypes the candidate must produce. A CPU
    # kernel missing for a half type falls back to float32, rounded to the case's dtype below.
    lowp_precision = "case"
    try:
        lowp = flatten_outputs(run(torch, bench or fn, inputs, input_names, attrs, None), output_names)
    except (RuntimeError, TypeError) as e:
        if not is_dtype_refusal(e):
            raise
        lowp_precision = "float32"
        lowp = flatten_outputs(run(torch, bench or fn, inputs, input_names, attrs, torch.float32), output_names)
        case_dtype = next((t.dtype for t in (x[0] if isinstance(x, list) else x for x in inputs)
                           if t is not None and t.is_floating_point()), torch.float32)
        lowp = [(n, t.to(case_dtype) if t.is_floating_point() else t) for n, t in lowp]

    # The fp64 golden; an operator without float64 CPU kernels runs in float32 (recorded).
    precision = "float64"
    try:
        gold = flatten_outputs(run(torch, oracle or fn, inputs, input_names, attrs, torch.float64), output_names)
    except (RuntimeError, TypeError) as e:
        if not is_dtype_refusal(e):
            raise
        precision = "float32"
        gold = flatten_outputs(run(torch, oracle or fn, inputs, input_names, attrs, torch.float32), output_names)

    if len(gold) != len(lowp):
        raise GoldenError("the fp64 and same-precision runs returned different numbers of outputs")
    fp64_tensors, lowp_tensors, dtypes = [], [], {}
    for (name, g), (lname, l) in zip(gold, lowp):
        if not isinstance(g, torch.Tensor) or not isinstance(l, torch.Tensor):
            raise GoldenError(f"output {name} is a {type(g).__name__}, not a tensor")
        if name != lname or list(g.shape) != list(l.shape):
            raise GoldenError(f"output {name} has shape {list(g.shape)} in float64 and {list(l.shape)} "
                              "in the case's dtype")
        dtypes["dtype." + name] = dtype_name(torch, l.dtype)
        for dest, t in ((fp64_tensors, g), (lowp_tensors, l)):
            values = t.detach().to(torch.float64).contiguous().reshape(-1)
            dest.append((name, "float64", list(t.shape), values.numpy().tobytes() if values.numel() else b""))
    meta = dict(dtypes, **{"golden.precision": precision, "golden.lowp_precision": lowp_precision})
    write_bundle(fp64_path, meta, fp64_tensors)
    write_bundle(lowp_path, meta, lowp_tensors)


# --- the reference arm: a worker speaking temper's protocol ------------------------------------

PROTOCOL_VERSION = 3
CMD_FD, REPLY_FD, ARENA_FD = 3, 4, 5
LOAD, RUN, EXIT, FLUSH = 1, 2, 3, 4
READY, LOADED, LOAD_FAILED, DONE, FLUSHED = 10, 11, 12, 13, 14
# temper_dtype (include/temper/kernel.h) -> name in dtype_table
DTYPE_CODES = {0: "float32", 1: "float16", 2: "bfloat16", 3: "float64", 4: "int8", 5: "int16", 6: "int32",
               7: "int64", 8: "uint8", 9: "bool"}
DTYPE_BYTES = {"float32": 4, "float16": 2, "bfloat16": 2, "float64": 8, "int8": 1, "int16": 2, "int32": 4,
               "int64": 8, "uint8": 1, "bool": 1}
GROUP_KINDS = {0: "tensor", 1: "list", 2: "absent"}


class Payload:
    def __init__(self, data):
        self.data, self.pos = data, 0

    def take(self, fmt):
        v = struct.unpack_from("=" + fmt, self.data, self.pos)
        self.pos += struct.calcsize("=" + fmt)
        return v[0]

    def string(self):
        n = self.take("I")
        s = self.data[self.pos:self.pos + n].decode("utf-8", "replace")
        self.pos += n
        return s

    def lst(self, fmt):
        return [self.take(fmt) for _ in range(self.take("I"))]

    def at_end(self):
        return self.pos >= len(self.data)


def frame(msg_type, payload=b""):
    return struct.pack("=IB", len(payload) + 1, msg_type) + payload


def pack_str(text):
    b = text.encode("utf-8")
    return struct.pack("=I", len(b)) + b


class TorchArm:
    """One arm of a timing job: the task's PyTorch function on the arena's tensors."""

    def __init__(self, torch, fn, declared, output_names, threads):
        self.torch, self.fn, self.declared, self.output_names = torch, fn, declared, output_names
        self.threads = threads
        self.cmd = os.fdopen(CMD_FD, "rb", buffering=0)
        self.reply = os.fdopen(REPLY_FD, "wb", buffering=0)
        self.flush_buf = None

    def read_exact(self, n):
        out = b""
        while len(out) < n:
            chunk = self.cmd.read(n - len(out))
            if not chunk:
                return None
            out += chunk
        return out

    def next_frame(self):
        head = self.read_exact(4)
        if head is None:
            return None, None
        (n,) = struct.unpack("=I", head)
        body = self.read_exact(n)
        if body is None or n < 1:
            return None, None
        return body[0], body[1:]

    def view(self, desc):
        dtype, shape, offset, nbytes = desc
        name = DTYPE_CODES[dtype]
        tdt = dtype_table(self.torch)[name]
        count = nbytes // DTYPE_BYTES[name]
        flat = self.torch.frombuffer(self.arena, dtype=tdt, count=count, offset=offset) if count else self.torch.empty(0, dtype=tdt)
        return flat.view(shape)

    def load(self, payload):
        r = Payload(payload)
        version = r.take("I")
        r.string()  # the artifact: this runner's function is named on its command line
        r.take("i")
        arena_size = r.take("Q")
        r.take("Q")  # memory limit: Python and torch are not limited (docs/goldens.md)
        r.take("i")  # num_threads: torch's come from --threads, the task's
        input_sets = r.take("i")

        def tensor():
            dtype = r.take("i")
            shape = r.lst("q")
            r.lst("q")  # strides: row-major, as the judge lays them out
            return dtype, shape, r.take("Q"), r.take("Q")

        inputs = [tensor() for _ in range(r.take("I"))]
        outputs = [tensor() for _ in range(r.take("I"))]
        self.attrs = {}
        for _ in range(r.take("I")):
            name, kind = r.string(), r.take("i")
            i, f, text = r.take("q"), r.take("d"), r.string()
            ints, floats = r.lst("q"), r.lst("d")
            self.attrs[name] = {0: i, 1: f, 2: bool(i), 3: text, 4: ints, 5: floats}.get(kind, i)
        self.flush_bytes = r.take("Q")
        cpus = r.lst("i")
        groups = []
        if not r.at_end():
            groups = [(r.take("i"), r.take("i"), r.take("i")) for _ in range(r.take("I"))]
        if version != PROTOCOL_VERSION:
            raise GoldenError(f"protocol version {version}, the runner speaks {PROTOCOL_VERSION}")
        if cpus:
            os.sched_setaffinity(0, cpus)
        self.arena = mmap.mmap(ARENA_FD, arena_size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        per_set = len(inputs) // max(1, input_sets)
        self.outputs = [self.view(t) for t in outputs]
        names = self.declared or [f"in{k}" for k in range(len(groups) or per_set)]
        self.calls = []
        for s in range(input_sets):
            views = [self.view(t) for t in inputs[s * per_set:(s + 1) * per_set]]
            if groups:
                grouped = [None if GROUP_KINDS[kind] == "absent" else views[first:first + count] if GROUP_KINDS[kind] == "list"
                           else views[first] for kind, first, count in groups]
            else:
                grouped = views
            self.calls.append(build_params(self.fn, grouped, names, self.attrs))
        # A CPU kernel missing for a half type: the call converts to float32 and back, as the
        # same-precision golden does (recorded in LOADED's description).
        self.upcast = False
        try:
            with self.torch.no_grad():
                self.fn(**self.calls[0])
        except (RuntimeError, TypeError) as e:
            if not is_dtype_refusal(e):
                raise
            self.upcast = True

    def call(self, params):
        torch = self.torch
        if self.upcast:
            # Per call: the judge writes fresh values into the arena before every one.
            params = {k: convert(torch, [v], torch.float32)[0] if isinstance(v, (torch.Tensor, list)) else v
                      for k, v in params.items()}
        with torch.no_grad():
            c0, t0 = time.thread_time_ns(), time.perf_counter_ns()
            result = self.fn(**params)
            t1, c1 = time.perf_counter_ns(), time.thread_time_ns()
        return result, t1 - t0, c1 - c0

    def run(self, payload):
        (s,) = struct.unpack_from("=i", payload)
        result, ns, cpu_ns = self.call(self.calls[s])
        flat = flatten_outputs(result, self.output_names)
        if len(flat) != len(self.outputs):
            return 1, ns, cpu_ns, f"the function returned {len(flat)} output(s), the case has {len(self.outputs)}"
        for (name, got), want in zip(flat, self.outputs):
            if tuple(got.shape) != tuple(want.shape):
                return 1, ns, cpu_ns, f"output {name} has shape {list(got.shape)}, expected {list(want.shape)}"
            want.copy_(got.detach().to(want.dtype))
        return 0, ns, cpu_ns, ""

    def flush(self):
        if not self.flush_bytes:
            return
        if self.flush_buf is None:
            self.flush_buf = self.torch.empty(self.flush_bytes, dtype=self.torch.uint8)
        self.flush_buf.add_(1)  # reads and writes every byte, on torch's threads

    def serve(self):
        send = self.reply.write
        send(frame(READY, struct.pack("=I", PROTOCOL_VERSION)))
        t, payload = self.next_frame()
        if t != LOAD:
            return 0
        try:
            self.load(payload)
        except GoldenError as e:
            send(frame(LOAD_FAILED, struct.pack("=B", 1) + pack_str(str(e))))
            return 0
        except Exception as e:  # the task's function failed on the inputs: a reference that cannot run
            send(frame(LOAD_FAILED, struct.pack("=B", 1) + pack_str(f"the PyTorch reference fails: {type(e).__name__}: {e}")))
            return 0
        # The part before ';' names the reference in reports: "torch 2.15.0, 1 thread".
        n = self.torch.get_num_threads()
        described = f"torch {self.torch.__version__}, {n} thread{'' if n == 1 else 's'}" + \
                    (" (its default)" if self.threads == 0 else "") + \
                    (", in float32 (torch's CPU kernels lack the case's dtype)" if self.upcast else "") + \
                    "; sandbox: none (the PyTorch reference is trusted code in Python)"
        send(frame(LOADED, pack_str(described)))
        while True:
            t, payload = self.next_frame()
            if t is None or t == EXIT:
                return 0
            if t == FLUSH:
                self.flush()
                send(frame(FLUSHED))
            elif t == RUN:
                try:
                    status, ns, cpu_ns, message = self.run(payload)
                except Exception as e:
                    status, ns, cpu_ns, message = 1, 0, 0, f"{type(e).__name__}: {e}"
                send(frame(DONE, struct.pack("=iqq", status, ns, cpu_ns) + pack_str(message)))
            else:
                return 0


def forkserver(serve):
    """Forks a worker per request on fd 3 (src/backend/forkserver.cpp): a request is one byte and
    four fds (the worker's stdout+stderr, commands, replies, arena); the answer is the worker's
    pid (int32), -1 when it could not fork. The worker is forked through an intermediate that
    exits at once, so that it becomes temper's child (temper is a child subreaper)."""
    import signal
    import socket
    ctl = socket.socket(fileno=CMD_FD)
    ctl.sendall(b"R")
    while True:
        try:
            msg, fds, _, _ = socket.recv_fds(ctl, 1, 4)
        except (OSError, InterruptedError):
            return 0
        if not msg:
            return 0
        if len(fds) != 4:
            for fd in fds:
                os.close(fd)
            ctl.sendall(struct.pack("=i", -1))
            continue
        r, w = os.pipe()
        mid = os.fork()
        if mid == 0:
            status = 1
            try:
                os.close(r)
                pid = os.fork()
                if pid == 0:
                    status = 1
                    try:
                        os.close(w)
                        os.setpgid(0, 0)
                        ctl.detach()  # fd 3 becomes the command socket below
                        out, cmd, reply, arena = fds
                        devnull = os.open(os.devnull, os.O_RDONLY)
                        os.dup2(devnull, 0)
                        for src, dst in ((out, 1), (out, 2), (cmd, CMD_FD), (reply, REPLY_FD), (arena, ARENA_FD)):
                            os.dup2(src, dst)
                        os.closerange(ARENA_FD + 1, 1 << 16)
                        # As temper starts a worker: default dispositions, nothing blocked.
                        for sig in (signal.SIGPIPE, signal.SIGINT, signal.SIGTERM, signal.SIGXFSZ):
                            signal.signal(sig, signal.SIG_DFL)
                        signal.pthread_sigmask(signal.SIG_SETMASK, [])
                        status = serve() or 0
                    except BaseException:
                        traceback.print_exc()
                    finally:
                        sys.stdout.flush()
                        sys.stderr.flush()
                        os._exit(status)
                try:
                    os.setpgid(pid, pid)  # also here, so temper's kill of the group cannot race the child
                except OSError:
                    pass
                os.write(w, struct.pack("=i", pid))
                status = 0
            finally:
                os._exit(status)
        os.close(w)
        data = os.read(r, 4)
        os.close(r)
        os.waitpid(mid, 0)
        for fd in fds:
            os.close(fd)
        ctl.sendall(data if len(data) == 4 else struct.pack("=i", -1))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--golden", required=True, help="the task's golden.py")
    ap.add_argument("--function", action="append", required=True,
                    help="the golden function's name; repeat for fallbacks, tried in order")
    ap.add_argument("--input-names", default="", help="the declared inputs, comma-separated, in order")
    ap.add_argument("--output-names", default="", help="the declared outputs, comma-separated, in order")
    ap.add_argument("--threads", type=int, default=1,
                    help="torch's intra-op threads; 0: torch's own default (what a user who sets nothing gets)")
    ap.add_argument("--serve", action="store_true",
                    help="be a timing job's PyTorch reference arm, speaking temper's worker protocol on fds 3-5")
    ap.add_argument("--protocol", type=int, default=PROTOCOL_VERSION, help="with --serve: the protocol version temper speaks")
    ap.add_argument("--forkserver", action="store_true",
                    help="import once, then fork a worker (--serve) or a golden run per request on fd 3")
    ap.add_argument("bundles", nargs="*",
                    help="INPUT FP64_OUT LOWP_OUT, repeated: one import of torch serves every input set")
    args = ap.parse_args()
    if args.serve:
        if args.protocol != PROTOCOL_VERSION:
            print(f"golden: temper speaks protocol {args.protocol}, this runner {PROTOCOL_VERSION}", file=sys.stderr)
            return 2
        import torch
        module = load_module(args.golden)
        fn, _, bench, _ = pick_function(module, args.function, args.golden)
        declared = [n for n in args.input_names.split(",") if n]
        output_names = [n for n in args.output_names.split(",") if n]

        def serve():
            # In the worker, after any fork: torch's thread pools start in the process that uses them.
            if args.threads > 0:
                torch.set_num_threads(args.threads)
            return TorchArm(torch, bench or fn, declared, output_names, max(0, args.threads)).serve()
        return forkserver(serve) if args.forkserver else serve()
    if not args.forkserver and (not args.bundles or len(args.bundles) % 3):
        ap.error("bundles come in threes: INPUT FP64_OUT LOWP_OUT")

    def failed(e):
        if isinstance(e, GoldenError):
            print(f"golden: {e}", file=sys.stderr)
            return 1
        # The task's code raised: say where, briefly.
        tb = traceback.extract_tb(e.__traceback__)
        where = next((f"{fr.filename}:{fr.lineno}" for fr in reversed(tb) if fr.filename == args.golden), "")
        print(f"golden: {type(e).__name__}: {e}" + (f" (at {where})" if where else ""), file=sys.stderr)
        return 1

    try:
        import torch
        module = load_module(args.golden)
        fn, oracle, bench, _ = pick_function(module, args.function, args.golden)
        declared = [n for n in args.input_names.split(",") if n]
        output_names = [n for n in args.output_names.split(",") if n]
    except Exception as e:
        return failed(e)

    def compute(bundles):
        try:
            torch.set_num_threads(max(1, args.threads))
            for k in range(0, len(bundles), 3):
                torch.manual_seed(0)  # a golden that draws random numbers still gives one answer per input set
                golden_one(torch, (fn, oracle, bench), declared, output_names, *bundles[k:k + 3])
            return 0
        except Exception as e:
            return failed(e)

    if args.forkserver:
        # One import for every golden temper asks for (the sampled checks of timing jobs): each
        # request's worker reads its bundle paths, NUL-separated, from fd 3 until EOF.
        def serve():
            with os.fdopen(CMD_FD, "rb") as f:
                bundles = [p for p in f.read().decode("utf-8").split("\0") if p]
            if not bundles or len(bundles) % 3:
                print("golden: bundles come in threes: INPUT FP64_OUT LOWP_OUT", file=sys.stderr)
                return 2
            return compute(bundles)
        return forkserver(serve)
    return compute(args.bundles)

if __name__ == "__main__":
    sys.exit(main())
